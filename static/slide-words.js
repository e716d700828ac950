// The guestbook in the slideshow: approved, shown messages appear between the photos, full
// screen, with the writer's name — a message written while the show runs comes next, the others
// in turn after every few photos (or one after another while there is no photo yet). It reads the
// guestbook when the show starts and follows the live stream the show's gallery holds open.

import { h, api } from './util.js';
import { t, onLangChange } from './i18n.js';

/** Photos shown between two messages from the loop. */
const EVERY = 3;

/** What the room may read: approved and shown (the organiser's own listing has the others too). */
function showable(m) {
  return Boolean(m && m.review === 'approved' && !m.hidden);
}

export class SlideWords {
  /** @param {string} slug the event */
  constructor(slug) {
    this.slug = slug;
    this.messages = new Map();
    this.fresh = [];
    this.index = 0;
    this.photos = 0;
    this.source = null;
    this.label = h('p', { class: 'slide-words-label' });
    this.text = h('blockquote', { class: 'slide-words-text', 'data-testid': 'slide-message-text' });
    this.by = h('figcaption', { class: 'slide-words-by', 'data-testid': 'slide-message-by' });
    this.el = h('figure', { class: 'slide-words', 'data-testid': 'slide-message', hidden: true }, this.label, this.text, this.by);
    onLangChange(() => this.renderWords());
    this.renderWords();
  }

  /** Reads the newest messages (one page: the loop needs no more). */
  async load() {
    try {
      const page = await api('GET', `/api/v1/events/${encodeURIComponent(this.slug)}/guestbook?limit=100`);
      for (const m of page.items || []) if (showable(m)) this.messages.set(m.id, m);
    } catch {
      // No guestbook for this viewer (yet): photos only.
    }
  }

  /** Follows the live stream `source`, once per stream. */
  follow(source) {
    if (!source || source === this.source) return;
    this.source = source;
    source.addEventListener('guestbook', (e) => {
      let m;
      try {
        m = JSON.parse(e.data);
      } catch {
        return;
      }
      if (!showable(m)) return this.forget(m?.id);
      if (!this.messages.has(m.id)) this.fresh.push(m.id);
      this.messages.set(m.id, m);
    });
    source.addEventListener('guestbook_removed', (e) => {
      try {
        this.forget(JSON.parse(e.data).id);
      } catch {
        // A broken event changes nothing.
      }
    });
  }

  forget(id) {
    this.messages.delete(id);
    this.fresh = this.fresh.filter((x) => x !== id);
  }

  /** A photo was shown. */
  counted() {
    this.photos += 1;
  }

  /**
   * The message to show as the next slide, or null for a photo: a new one first, else one from
   * the loop once `EVERY` photos have passed (at once when there are no photos).
   */
  take(noPhotos) {
    while (this.fresh.length) {
      const m = this.messages.get(this.fresh.shift());
      if (m) return this.taken(m);
    }
    if (!this.messages.size || (!noPhotos && this.photos < EVERY)) return null;
    const all = [...this.messages.values()].sort((a, b) => (a.id < b.id ? -1 : 1));
    return this.taken(all[this.index++ % all.length]);
  }

  taken(m) {
    this.photos = 0;
    return m;
  }

  show(m) {
    this.el.dataset.messageId = m.id;
    this.text.textContent = m.text;
    this.by.textContent = `— ${m.guest?.display_name ?? ''}`;
    this.el.hidden = false;
  }

  hide() {
    this.el.hidden = true;
    delete this.el.dataset.messageId;
  }

  renderWords() {
    this.label.textContent = t('slide_guestbook');
  }
}
