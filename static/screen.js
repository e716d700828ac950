// The venue screen's page (`/e/{slug}/screen#s_…`, the link the organiser made): it trades the
// link's token for the screen cookie, takes the token out of the address bar, and runs the live
// slideshow — what the event's guests see, nothing more, and no organiser rights. The screen
// stays awake (Wake Lock, asked again whenever the page comes back into view); one tap on the
// big button goes full screen. When the link is revoked the show stops and says so.

import { h, api, ApiError } from './util.js';
import { t, onLangChange } from './i18n.js';
import { Gallery } from './gallery.js';
import { Slideshow } from './slideshow.js';

/** How often the screen asks whether its link still opens the event (and reads its name). */
const CHECK_MS = 60_000;
/** The most pages of the gallery the screen loads at start; new photos come live. */
const MAX_PAGES = 20;

export async function screenPage({ slug, event, main, messages }) {
  document.body.classList.add('screen');
  const notice = h('section', { class: 'card screen-notice', 'data-testid': 'screen-notice', role: 'alert', hidden: true });
  const fullButton = h('button', { type: 'button', class: 'screen-full', 'data-action': 'full-screen', hidden: true });
  main.replaceChildren(notice);
  let slideshow = null;
  let stopped = false;
  let lock = null;

  /** The show stops: the link was revoked or refused; the page says why. */
  function refuse(key) {
    stopped = true;
    slideshow?.stop();
    fullButton.hidden = true;
    notice.replaceChildren(h('h2', {}, t('screen_refused_title')), h('p', {}, t(key)));
    notice.dataset.reason = key;
    notice.hidden = false;
    lock?.release().catch(() => {});
  }

  const token = decodeURIComponent(location.hash.replace(/^#/, ''));
  if (token) {
    // The token stays out of the address bar, the history and any photo of the screen.
    history.replaceState(null, '', location.pathname);
    try {
      await api('POST', `/api/v1/events/${encodeURIComponent(slug)}/screens`, { token });
    } catch (err) {
      return refuse(err instanceof ApiError && err.status === 429 ? 'screen_too_many' : 'screen_revoked');
    }
  }
  if (!(await stillOpens())) return;

  let current = event;
  const root = h('div', { hidden: true });
  main.append(root);
  const gallery = new Gallery({ slug, root, viewer: () => ({}), messages });
  slideshow = new Slideshow({ gallery: () => gallery, event: () => current, slug, screen: true });
  for (let pages = 0; !gallery.exhausted && pages < MAX_PAGES; pages += 1) await gallery.loadMore();
  if (stopped) return;
  slideshow.start();
  slideshow.el.append(fullButton);
  gallery.live((u) => slideshow.arrived(u));
  // A revoked link ends the live stream at its next news, and the browser's reconnect is refused.
  gallery.source?.addEventListener('error', () => {
    if (gallery.source?.readyState !== EventSource.OPEN) stillOpens();
  });

  fullButton.addEventListener('click', async () => {
    try {
      await document.documentElement.requestFullscreen();
    } catch {
      // No full screen here: the show goes on in the window.
    }
  });
  const renderFull = () => {
    fullButton.textContent = t('screen_full');
    fullButton.hidden = stopped || Boolean(document.fullscreenElement);
  };
  document.addEventListener('fullscreenchange', renderFull);
  onLangChange(renderFull);
  renderFull();

  // Wake Lock: the screen must not go dark. The browser lets it go when the page is hidden;
  // it is asked for again when the page is back.
  async function keepAwake() {
    if (!('wakeLock' in navigator) || lock || stopped || document.visibilityState !== 'visible') return;
    try {
      lock = await navigator.wakeLock.request('screen');
      document.body.dataset.wakeLock = 'held';
      lock.addEventListener('release', () => {
        lock = null;
        document.body.dataset.wakeLock = 'released';
      });
    } catch {
      // Refused (battery saver, not a secure context): the screen's own settings decide.
      document.body.dataset.wakeLock = 'refused';
    }
  }
  document.addEventListener('visibilitychange', keepAwake);
  keepAwake();

  const timer = setInterval(async () => {
    if (!(await stillOpens())) return clearInterval(timer);
    // A new name shows from the next photo on.
    const fresh = await api('GET', `/api/v1/events/${encodeURIComponent(slug)}`).catch(() => null);
    if (fresh?.name) current = fresh;
  }, CHECK_MS);

  /** Whether this browser is still the event's screen; when it is not, the show stops. */
  async function stillOpens() {
    try {
      await api('GET', `/api/v1/events/${encodeURIComponent(slug)}/uploads?limit=1`);
      return true;
    } catch (err) {
      if (err instanceof ApiError && (err.status === 401 || err.status === 403)) {
        refuse('screen_revoked');
        return false;
      }
      // No answer: the screen keeps showing what it has.
      return true;
    }
  }
}
