// The page's side of the service worker (sw.js): registers it, asks it to send the queue when
// the connection returns (Background Sync), and offers to install the event's page as an app.
// Service workers, Background Sync and installing exist only in a secure context (HTTPS, or
// localhost): on a plain http:// LAN address none of this runs and the page sends its queue
// itself, as it always did, without a word about what is missing.

import { h } from './util.js';
import { t, onLangChange } from './i18n.js';

// How long the page waits after news from its queue before asking for the sync (one request
// for a whole pick, not one per photo).
const SYNC_AFTER_MS = 1000;

/** Whether this page may have a service worker. */
export function workerPossible() {
  return Boolean(globalThis.isSecureContext && 'serviceWorker' in navigator);
}

/** Registers the worker (once per page load); null where there is none. */
export function registerWorker() {
  if (!workerPossible()) return Promise.resolve(null);
  return navigator.serviceWorker.register('/sw.js', { scope: '/e/', type: 'module' }).catch((e) => {
    console.warn('the service worker could not be registered; the page sends its queue itself', e);
    return null;
  });
}

/**
 * Asks the worker to send `slug`'s queue when the connection is there (at once when it is):
 * the photos go on when the page is closed. Nothing where the browser has no Background Sync.
 */
export class BackgroundSending {
  /** @param {{slug: string, queue: {pending(): object[]}, registration: Promise<ServiceWorkerRegistration | null>}} o */
  constructor({ slug, queue, registration }) {
    this.tag = `upload:${slug}`;
    this.queue = queue;
    this.registration = registration;
    this.timer = null;
    // Put away or closed with photos waiting: the worker goes on with them.
    document.addEventListener('visibilitychange', () => {
      if (document.visibilityState === 'hidden') this.askNow();
    });
  }

  /** The queue changed: photos waiting (chosen, or a try that found no connection) are the worker's to send too. */
  changed(item) {
    if (item.state !== 'queued' && !(item.state === 'failed' && !item.final)) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.askNow(), SYNC_AFTER_MS);
  }

  async askNow() {
    clearTimeout(this.timer);
    if (!this.queue.pending().length) return;
    const registration = await this.registration;
    if (!registration?.sync) return;
    await registration.sync.register(this.tag).catch((e) => console.warn('no background sync', e));
  }
}

// The browser's offer to install the page (Chromium's `beforeinstallprompt`) comes early, often
// before the guest's views have loaded: app.js starts listening at once, and the offer waits here.
let offered = null;
const offerListeners = new Set();

/** Starts listening for the browser's offer to install the page (app.js, first thing). */
export function watchInstallOffer() {
  window.addEventListener('beforeinstallprompt', (e) => {
    e.preventDefault();
    offered = e;
    for (const listener of offerListeners) listener(e);
  });
  window.addEventListener('appinstalled', () => {
    offered = null;
    for (const listener of offerListeners) listener(null);
  });
}

/**
 * "Install as an app": shown while the browser offers to install the event's page, gone once it
 * is installed (or where the page already runs as one: the browser then offers nothing).
 */
export class InstallOffer {
  constructor(section) {
    this.prompt = null;
    this.text = h('span');
    this.hint = h('span', { class: 'hint' });
    this.button = h('button', { type: 'button', class: 'secondary small', 'data-action': 'install', onclick: () => this.install() });
    this.el = h('p', { class: 'install-offer', 'data-testid': 'install-offer', hidden: true }, this.hint, this.button);
    section.append(this.el);
    onLangChange(() => this.words());
    this.words();
    const show = (offer) => {
      this.prompt = offer;
      this.el.hidden = !offer;
    };
    offerListeners.add(show);
    show(offered);
  }

  words() {
    this.button.textContent = t('install_app');
    this.hint.textContent = t('install_hint');
  }

  async install() {
    const prompt = this.prompt;
    if (!prompt) return;
    // An offer is good for one prompt.
    offered = null;
    this.prompt = null;
    this.el.hidden = true;
    await prompt.prompt();
  }
}
