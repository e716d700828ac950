// The organiser's "Screen at the venue" card: a link for the venue's screen or projector that
// shows the live slideshow and nothing else (no organiser rights on that laptop). The link is
// shown once, when it is made (the server keeps only its digest): copy it or open it on the
// screen. Making a new one replaces the old; revoking stops every screen that opened it.

import { h, api } from './util.js';
import { t, formatWhen } from './i18n.js';
import { showError } from './messages.js';

export class ScreenLinkCard {
  /**
   * @param {object} o
   * @param {string} o.slug
   * @param {(event: object) => void} o.onChanged the event as read again after a change
   */
  constructor({ slug, onChanged }) {
    this.slug = slug;
    this.onChanged = onChanged;
    this.event = null;
    this.link = null;
    this.heading = h('h2', {});
    this.hint = h('p', { class: 'hint' });
    this.state = h('p', { class: 'screen-state', 'data-testid': 'screen-state' });
    this.url = h('input', { type: 'text', readonly: true, class: 'screen-url', 'data-testid': 'screen-url', 'aria-label': 'URL', hidden: true });
    this.open = h('a', { class: 'button secondary', 'data-action': 'open-screen', target: '_blank', rel: 'noopener', hidden: true });
    this.copy = h('button', { type: 'button', class: 'secondary', 'data-action': 'copy-screen-link', hidden: true });
    this.make = h('button', { type: 'button', 'data-action': 'make-screen-link' });
    this.revoke = h('button', { type: 'button', class: 'danger', 'data-action': 'revoke-screen-link' });
    this.note = h('p', { class: 'note', role: 'status', 'data-testid': 'screen-note' });
    this.el = h('div', { class: 'card screen-link', 'data-testid': 'screen-link-card' },
      this.heading, this.hint, this.state, this.url,
      h('div', { class: 'share-actions' }, this.copy, this.open),
      h('div', { class: 'share-actions' }, this.make, this.revoke),
      this.note);
    this.url.addEventListener('focus', () => this.url.select());
    this.make.addEventListener('click', () => this.send('POST'));
    this.revoke.addEventListener('click', () => this.send('DELETE'));
    this.copy.addEventListener('click', async () => {
      try {
        if (!navigator.clipboard?.writeText) throw new Error('no clipboard');
        await navigator.clipboard.writeText(this.link.url);
        this.note.textContent = t('link_copied');
      } catch {
        this.url.focus();
        this.url.select();
        this.note.textContent = t('link_copy_by_hand');
      }
    });
  }

  async send(method) {
    this.make.disabled = true;
    this.revoke.disabled = true;
    this.note.textContent = '';
    try {
      const answer = await api(method, `/api/v1/events/${encodeURIComponent(this.slug)}/screen-link`);
      this.link = method === 'POST' ? answer : null;
      this.note.textContent = t(method === 'POST' ? 'screen_made' : 'screen_revoked_note');
      this.render({ ...this.event, screen_link_at: this.link?.created_at ?? null });
      this.onChanged(await api('GET', `/api/v1/events/${encodeURIComponent(this.slug)}`));
    } catch (err) {
      showError(this.note, err);
    } finally {
      this.make.disabled = false;
      this.revoke.disabled = false;
    }
  }

  render(event) {
    this.event = event;
    // The link just made stands until revoked or replaced, whatever an older read of the event says.
    const active = Boolean(this.link || event.screen_link_at);
    this.el.dataset.active = String(active);
    this.heading.textContent = t('screen_title');
    this.hint.textContent = t('screen_hint');
    this.state.textContent = !active ? t('screen_none') : this.link ? t('screen_shown_once') : t('screen_active', { when: formatWhen(event.screen_link_at) });
    const shown = Boolean(this.link);
    this.url.hidden = !shown;
    this.copy.hidden = !shown;
    this.open.hidden = !shown;
    if (shown) {
      this.url.value = this.link.url;
      this.open.href = this.link.url;
    }
    this.copy.textContent = t('copy_link');
    this.open.textContent = t('screen_open');
    this.make.textContent = t(active ? 'screen_make_new' : 'screen_make');
    this.revoke.textContent = t('screen_revoke');
    this.revoke.hidden = !active;
  }
}
