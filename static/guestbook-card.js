// The organiser's guestbook card on the dashboard: every message (waiting ones first marked),
// each with Approve (while it waits), Hide / Show and Delete (asked in place). Followed live.

import { h, api } from './util.js';
import { t, onLangChange } from './i18n.js';
import { confirmInPlace, showError } from './messages.js';
import { GuestbookFeed } from './guestbook-feed.js';

export class GuestbookCard {
  /**
   * @param {object} o
   * @param {string} o.slug the event
   * @param {import('./messages.js').MessageArea} o.messages the page's message area
   */
  constructor({ slug, messages }) {
    this.slug = slug;
    this.messages = messages;
    this.feed = new GuestbookFeed({ slug, decorate: (li, m) => this.decorate(li, m), onChange: () => this.renderCount() });
    this.heading = h('h2', { id: 'guestbook-manage-heading' });
    this.hint = h('p', { class: 'hint' });
    this.note = h('p', { class: 'note', role: 'status' });
    this.el = h('section', { class: 'card guestbook-card', 'data-testid': 'guestbook-card', 'aria-labelledby': 'guestbook-manage-heading' }, this.heading, this.hint, this.note, this.feed.el);
    onLangChange(() => this.render());
    this.render();
  }

  /** Reads the first page and follows the live stream. */
  start(source) {
    this.feed.follow(source);
    if (!this.started) {
      this.started = true;
      this.feed.loadMore();
    }
  }

  decorate(li, m) {
    const button = (action, label, run, cls = 'secondary small') =>
      h('button', { type: 'button', class: cls, 'data-action': action, onclick: (e) => run(e.currentTarget) }, label);
    const actions = [];
    if (m.review === 'pending') actions.push(button('guestbook-approve', t('guestbook_approve'), () => this.change(m, { approved: true }), 'small'));
    actions.push(m.hidden ? button('guestbook-show', t('guestbook_show'), () => this.change(m, { hidden: false })) : button('guestbook-hide', t('guestbook_hide'), () => this.change(m, { hidden: true })));
    actions.push(button('guestbook-delete', t('guestbook_delete'), (trigger) => this.remove(m, trigger), 'danger small'));
    const state = m.hidden ? t('guestbook_hidden') : m.review === 'pending' ? t('guestbook_waiting') : '';
    if (state) li.append(h('p', { class: 'guestbook-note' }, state));
    li.append(h('div', { class: 'guestbook-actions' }, ...actions));
  }

  async change(m, patch) {
    this.note.textContent = '';
    try {
      this.feed.upsert(await api('PATCH', `/api/v1/events/${encodeURIComponent(this.slug)}/guestbook/${m.id}`, patch));
    } catch (err) {
      showError(this.note, err);
    }
  }

  async remove(m, trigger) {
    if (!(await confirmInPlace(trigger, { question: t('guestbook_delete_question'), confirm: t('guestbook_delete') }))) return;
    this.note.textContent = '';
    try {
      await api('DELETE', `/api/v1/events/${encodeURIComponent(this.slug)}/guestbook/${m.id}`);
      this.feed.remove(m.id);
      this.messages?.note?.(t('guestbook_deleted'));
    } catch (err) {
      showError(this.note, err);
    }
  }

  renderCount() {
    const waiting = this.feed.shown().filter((m) => m.review === 'pending').length;
    this.el.dataset.pending = String(waiting);
  }

  render() {
    this.heading.textContent = t('guestbook_manage');
    this.hint.textContent = t('guestbook_manage_hint');
    this.feed.render();
  }
}
