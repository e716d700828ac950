// The guestbook on the guest's page: a short form to leave the hosts a few words, and the entries
// (guestbook-feed.js), newest first. The guest's own message shows at once — saying so while it
// waits for the hosts' approval or was hidden by them. Sent with an `Idempotency-Key` (api()), so
// a retry after a lost answer writes it once.

import { h, api } from './util.js';
import { t, onLangChange } from './i18n.js';
import { showError } from './messages.js';
import { GuestbookFeed } from './guestbook-feed.js';

/** The server's limit (docs/api.md: 1–500 characters). */
export const MESSAGE_MAX = 500;

export class GuestbookView {
  /**
   * @param {HTMLElement} section where the view goes
   * @param {{slug: string}} o
   */
  constructor(section, { slug }) {
    this.slug = slug;
    this.me = null;
    this.blocked = false;
    this.feed = new GuestbookFeed({ slug, decorate: (li, m) => this.decorate(li, m) });
    this.heading = h('h2', { id: 'guestbook-heading' });
    this.hint = h('p', { class: 'hint' });
    this.label = h('label', { for: 'guestbook-text' });
    this.text = h('textarea', { id: 'guestbook-text', name: 'guestbook_text', rows: 2, maxlength: MESSAGE_MAX, 'aria-describedby': 'guestbook-count' });
    this.count = h('span', { class: 'hint guestbook-count', id: 'guestbook-count' });
    this.send = h('button', { type: 'submit', 'data-action': 'guestbook-send' });
    this.status = h('p', { class: 'note', role: 'status', 'data-testid': 'guestbook-status' });
    this.form = h('form', { class: 'guestbook-form', 'data-testid': 'guestbook-form' }, this.label, this.text, h('div', { class: 'row guestbook-row' }, this.count, this.send), this.status);
    section.setAttribute('aria-labelledby', 'guestbook-heading');
    section.append(this.heading, this.hint, this.form, this.feed.el);
    this.text.addEventListener('input', () => this.renderCount());
    this.form.addEventListener('submit', (e) => {
      e.preventDefault();
      this.write();
    });
    onLangChange(() => this.render());
    this.render();
  }

  /** Reads the first page and follows the live stream; `me` is the guest (their own entries say more). */
  start({ me, source }) {
    this.me = me;
    this.follow(source);
    if (!this.started) {
      this.started = true;
      this.feed.loadMore();
    }
  }

  follow(source) {
    this.feed.follow(source);
  }

  setBlocked(blocked) {
    this.blocked = blocked;
    this.render();
  }

  async write() {
    const text = this.text.value.trim();
    if (!text) {
      this.text.focus();
      return;
    }
    this.send.disabled = true;
    this.status.textContent = '';
    try {
      const m = await api('POST', `/api/v1/events/${encodeURIComponent(this.slug)}/guestbook`, { text });
      this.feed.upsert(m);
      this.text.value = '';
      this.status.textContent = m.review === 'pending' ? t('guestbook_sent_pending') : t('guestbook_sent');
    } catch (err) {
      showError(this.status, err);
      if (err?.code === 'guest_blocked') this.setBlocked(true);
    } finally {
      this.send.disabled = this.blocked;
      this.renderCount();
    }
  }

  /** The guest's own entry says whether it waits or was hidden. */
  decorate(li, m) {
    if (!this.me || m.guest?.id !== this.me.id) return;
    li.classList.add('own');
    const note = m.hidden ? t('guestbook_hidden') : m.review === 'pending' ? t('guestbook_waiting') : '';
    if (note) li.append(h('p', { class: 'guestbook-note' }, note));
  }

  renderCount() {
    const n = [...this.text.value].length;
    this.count.textContent = n ? t('guestbook_chars', { n, max: MESSAGE_MAX }) : '';
  }

  render() {
    this.heading.textContent = t('guestbook');
    this.hint.textContent = this.blocked ? t('guestbook_blocked') : t('guestbook_hint');
    this.label.textContent = t('guestbook_label');
    this.text.placeholder = t('guestbook_placeholder');
    this.text.disabled = this.blocked;
    this.send.disabled = this.blocked;
    this.send.textContent = t('guestbook_send');
    this.renderCount();
    this.feed.render();
  }
}
