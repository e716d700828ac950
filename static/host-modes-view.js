// What the guest is told about the event's host modes, above the gallery: photos wait for the
// hosts' approval, the gallery is private ("drop box"), or it opens at a set time — said in the
// guest's language and time zone. At that time the gallery opens without a reload: a timer
// asks the server (whose clock decides) and, once it says the gallery is open, the page reads
// the gallery afresh.

import { h, api } from './util.js';
import { t, onLangChange, formatWhen } from './i18n.js';

/** Timers cannot wait longer than about 24.8 days; a later time is looked at again on the way. */
const MAX_WAIT_MS = 2 ** 31 - 1;
/** When the server's clock is behind this device's: ask again this soon. */
const RETRY_MS = 5000;

export class HostModesView {
  /**
   * @param {HTMLElement} section where the note goes (first in it)
   * @param {{slug: string, onOpened: () => void}} o `onOpened`: the gallery just opened
   */
  constructor(section, { slug, onOpened }) {
    this.slug = slug;
    this.onOpened = onOpened;
    this.event = {};
    this.timer = null;
    this.note = h('div', { class: 'host-modes-note', 'data-testid': 'gallery-mode', hidden: true });
    section.prepend(this.note);
    onLangChange(() => this.render());
  }

  /** The event as the server last described it (its public view). */
  update(event) {
    this.event = event || {};
    this.render();
    this.schedule();
  }

  render() {
    const e = this.event;
    const lines = [];
    if (e.gallery === 'own_uploads') lines.push(['drop-box', t('mode_drop_box')]);
    else if (e.gallery_open === false && e.gallery_opens_at) lines.push(['opens-at', t('mode_opens_at', { when: formatWhen(e.gallery_opens_at) })]);
    if (e.review_uploads) lines.push(['review', t('mode_review')]);
    this.note.replaceChildren(...lines.map(([mode, text]) => h('p', { 'data-mode': mode }, text)));
    this.note.hidden = lines.length === 0;
  }

  /** While the gallery waits for its time, wake up then and ask the server. */
  schedule() {
    clearTimeout(this.timer);
    const e = this.event;
    if (e.gallery !== 'everyone' || e.gallery_open !== false || !e.gallery_opens_at) return;
    const wait = Math.max(0, new Date(e.gallery_opens_at).getTime() - Date.now());
    this.timer = setTimeout(() => this.check(), Math.min(wait, MAX_WAIT_MS));
  }

  async check() {
    let now;
    try {
      now = await api('GET', `/api/v1/events/${encodeURIComponent(this.slug)}`);
    } catch {
      // Offline for a moment: try again soon.
      this.timer = setTimeout(() => this.check(), RETRY_MS);
      return;
    }
    const opened = this.event.gallery_open === false && now.gallery_open !== false;
    this.update(now);
    if (opened) this.onOpened();
    // Still closed although its time has come by this device's clock: the server's is behind.
    else if (now.gallery_open === false && new Date(now.gallery_opens_at).getTime() <= Date.now()) {
      clearTimeout(this.timer);
      this.timer = setTimeout(() => this.check(), RETRY_MS);
    }
  }
}
