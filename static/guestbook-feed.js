// The event's guestbook as one reader sees it: its messages newest first, a page at a time
// (keyset cursor), followed on the live stream (`guestbook`, `guestbook_removed`) that the page's
// gallery already holds open. Drawn as a list; the guest's view (guestbook-view.js) and the
// organiser's card (guestbook-card.js) add what each needs to an entry. Messages are text, never HTML.

import { h, api } from './util.js';
import { t, lang, onLangChange } from './i18n.js';

const PAGE = 20;

/** "Sat 21:05", in the reader's language and time zone. */
function shortTime(iso) {
  try {
    return new Intl.DateTimeFormat(lang(), { weekday: 'short', hour: '2-digit', minute: '2-digit' }).format(new Date(iso));
  } catch {
    return '';
  }
}

export class GuestbookFeed {
  /**
   * @param {object} o
   * @param {string} o.slug the event
   * @param {(li: HTMLElement, m: object) => void} [o.decorate] adds a reader's own parts to an entry
   * @param {(m: object) => boolean} [o.keep] which messages the list shows (default all it is given)
   * @param {() => void} [o.onChange] after the list changed
   */
  constructor({ slug, decorate = () => {}, keep = () => true, onChange = () => {} }) {
    this.slug = slug;
    this.decorate = decorate;
    this.keep = keep;
    this.onChange = onChange;
    this.messages = new Map();
    this.cursor = null;
    this.exhausted = false;
    this.loading = null;
    this.source = null;
    this.list = h('ul', { class: 'guestbook-list', 'data-testid': 'guestbook' });
    this.empty = h('p', { class: 'empty guestbook-empty', hidden: true });
    this.more = h('button', { type: 'button', class: 'secondary small', 'data-action': 'guestbook-more', hidden: true, onclick: () => this.loadMore() });
    this.el = h('div', { class: 'guestbook-feed' }, this.list, this.empty, this.more);
    onLangChange(() => this.render());
  }

  get path() {
    return `/api/v1/events/${encodeURIComponent(this.slug)}/guestbook`;
  }

  /** The next (older) page. */
  loadMore() {
    if (this.loading || this.exhausted) return this.loading;
    const query = `?limit=${PAGE}${this.cursor ? `&cursor=${encodeURIComponent(this.cursor)}` : ''}`;
    this.loading = api('GET', this.path + query)
      .then((page) => {
        for (const m of page.items || []) this.messages.set(m.id, m);
        this.cursor = page.next_cursor || null;
        this.exhausted = !this.cursor;
      })
      .catch(() => {})
      .finally(() => {
        this.loading = null;
        this.render();
      });
    return this.loading;
  }

  /** Follows the live stream `source` (once per stream: a new one after a reconnect is followed too). */
  follow(source) {
    if (!source || source === this.source) return;
    this.source = source;
    source.addEventListener('guestbook', (e) => {
      try {
        this.upsert(JSON.parse(e.data));
      } catch (err) {
        console.warn('bad live event', err);
      }
    });
    source.addEventListener('guestbook_removed', (e) => {
      try {
        this.remove(JSON.parse(e.data).id);
      } catch (err) {
        console.warn('bad live event', err);
      }
    });
  }

  upsert(m) {
    if (!m?.id) return;
    this.messages.set(m.id, m);
    this.render();
  }

  remove(id) {
    if (this.messages.delete(id)) this.render();
  }

  /** Newest first (ids are time-ordered). */
  shown() {
    return [...this.messages.values()].filter((m) => this.keep(m)).sort((a, b) => (a.id < b.id ? 1 : -1));
  }

  render() {
    const items = this.shown().map((m) => {
      const li = h(
        'li',
        { class: 'guestbook-item', 'data-message-id': m.id, 'data-review': m.review, 'data-hidden': String(Boolean(m.hidden)) },
        h('p', { class: 'guestbook-text' }, m.text),
        h('p', { class: 'guestbook-by' }, `— ${m.guest?.display_name ?? ''}`, h('time', { datetime: m.created_at }, ` · ${shortTime(m.created_at)}`)),
      );
      this.decorate(li, m);
      return li;
    });
    this.list.replaceChildren(...items);
    this.empty.textContent = t('guestbook_empty');
    this.empty.hidden = items.length > 0 || !this.exhausted;
    this.more.textContent = t('guestbook_more');
    this.more.hidden = this.exhausted;
    this.onChange();
  }
}
