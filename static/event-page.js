// The top of the guest's page as the organiser shaped it: the cover photo as a banner, the
// welcome text under the event's name (plain text, its line breaks kept), and when uploads are
// open ("Uploads open Sat 14 Jun, 14:00 – Sun 15 Jun, 02:00", in the guest's language and time
// zone). `uploadState` says whether uploads are open at a moment, and when that changes next.

import { h } from './util.js';
import { t, lang, onLangChange } from './i18n.js';

/** The page's language with the browser's region where they agree ("en-US"), else a default. */
function locale() {
  const want = lang();
  const browser = navigator.languages?.find((l) => l.toLowerCase().startsWith(want)) || '';
  return browser.includes('-') ? browser : want === 'de' ? 'de-DE' : 'en-GB';
}

/** "Sat 14 Jun, 14:00": a moment of the window, in the guest's time zone. */
export function when(ms) {
  try {
    return new Date(ms).toLocaleString(locale(), { weekday: 'short', day: 'numeric', month: 'short', hour: '2-digit', minute: '2-digit' });
  } catch {
    return new Date(ms).toISOString();
  }
}

function moment(iso) {
  const ms = iso ? Date.parse(iso) : NaN;
  return Number.isFinite(ms) ? ms : null;
}

/**
 * Whether the event takes uploads at `now`: the organiser's switch and the upload window.
 * @returns {{open: boolean, why: null | {kind: 'closed'} | {kind: 'not_yet' | 'ended', at: number}, next: number | null}}
 *   `next`: when this changes by itself (the window opens or ends), if it does
 */
export function uploadState(event, now = Date.now()) {
  const from = moment(event.uploads_open_from);
  const until = moment(event.uploads_open_until);
  if (event.uploads_open === false) return { open: false, why: { kind: 'closed' }, next: null };
  if (from !== null && now < from) return { open: false, why: { kind: 'not_yet', at: from }, next: from };
  if (until !== null && now >= until) return { open: false, why: { kind: 'ended', at: until }, next: null };
  return { open: true, why: null, next: until };
}

export class EventPageView {
  /** @param {HTMLElement} section where the view goes (above joining, uploading and the gallery) */
  constructor(section) {
    this.event = null;
    this.cover = h('img', { class: 'cover', 'data-testid': 'cover', alt: '', decoding: 'async', hidden: true });
    // A cover that does not load (removed meanwhile) leaves no broken image behind.
    this.cover.addEventListener('error', () => {
      this.cover.hidden = true;
    });
    this.cover.addEventListener('load', () => {
      this.cover.hidden = false;
    });
    this.welcome = h('p', { class: 'welcome', 'data-testid': 'welcome-text', hidden: true });
    this.window = h('p', { class: 'upload-window', 'data-testid': 'upload-window', hidden: true });
    section.append(this.cover, this.welcome, this.window);
    onLangChange(() => this.render(this.event));
  }

  /** Shows the event as the server describes it to guests. */
  render(event) {
    this.event = event;
    if (!event) return;
    const src = event.cover_url || '';
    if (!src) {
      this.cover.hidden = true;
      this.cover.removeAttribute('src');
    } else if (this.cover.getAttribute('src') !== src) {
      this.cover.src = src;
    }
    // Text, never HTML: what the organiser typed shows as typed.
    this.welcome.textContent = event.welcome_text || '';
    this.welcome.hidden = !event.welcome_text;
    const from = moment(event.uploads_open_from);
    const until = moment(event.uploads_open_until);
    let line = '';
    if (from !== null && until !== null) line = t('window_both', { from: when(from), until: when(until) });
    else if (from !== null) line = t('window_from', { from: when(from) });
    else if (until !== null) line = t('window_until', { until: when(until) });
    this.window.textContent = line;
    this.window.hidden = !line;
  }
}
