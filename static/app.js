// Entry point: finds out which page this is (home, a guest's event page, an organiser's, a
// venue screen's, the admin's; all but the guest's loaded only when asked for, so a guest's
// phone fetches the guest's modules alone), loads the event and hands over to that page, with the page's message area.
// A guest's event link arrives with what the page would ask first (the event, the server's
// limits, who the visitor is) inside it (`#boot`): on a weak network each question is a round trip.

import { h, api, ApiError, routeOf } from './util.js';
import { t, applyStatic, toggleLang, onLangChange } from './i18n.js';
import { guestPage } from './guest.js';
import { MessageArea } from './messages.js';
import { watchInstallOffer } from './app-worker.js';

watchInstallOffer();

const main = document.getElementById('main');
const title = document.getElementById('event-name');
const langButton = document.getElementById('lang');
const messages = new MessageArea();
document.body.append(messages.el);

function renderChrome() {
  applyStatic();
  langButton.textContent = t('switch_to');
}
langButton.addEventListener('click', toggleLang);
onLangChange(renderChrome);
renderChrome();

/** What the server put into a guest's page for `slug`; null where it put nothing. */
function booted(slug) {
  const el = document.getElementById('boot');
  if (!el) return null;
  try {
    const boot = JSON.parse(el.textContent);
    return boot?.event?.slug === slug ? boot : null;
  } catch {
    return null;
  }
}

async function start() {
  const route = routeOf(location);
  if (route.page === 'admin') {
    document.body.classList.add('admin');
    const { adminPage } = await import('./admin.js');
    await adminPage({ main, title, messages });
    document.body.dataset.ready = 'true';
    return;
  }
  if (route.page === 'home') {
    main.replaceChildren(h('section', { class: 'card' }, h('p', { 'data-i18n': 'tagline' }, t('tagline')), h('p', { 'data-i18n': 'need_link' }, t('need_link'))));
    return;
  }
  const boot = route.page === 'guest' ? booted(route.slug) : null;
  let event = boot?.event;
  try {
    event ??= await api('GET', `/api/v1/events/${encodeURIComponent(route.slug)}`);
  } catch (e) {
    if (e instanceof ApiError && e.status !== 0) {
      main.replaceChildren(h('section', { class: 'card' }, h('p', { class: 'error', 'data-i18n': 'no_event' }, t('no_event'))));
      return;
    }
    // Offline: the guest page still shows (and keeps) its queue.
    event = { slug: route.slug, name: '', uploads_open: true };
  }
  title.textContent = event.name;
  document.title = event.name ? `${event.name} · Confetti` : 'Confetti';
  if (route.page === 'organiser') {
    document.body.classList.add('organiser');
    const { organiserPage } = await import('./organiser.js');
    await organiserPage({ slug: route.slug, event, main, messages });
  } else if (route.page === 'screen') {
    const { screenPage } = await import('./screen.js');
    await screenPage({ slug: route.slug, event, main, messages });
  } else {
    await guestPage({ slug: route.slug, event, main, messages, boot });
  }
  document.body.dataset.ready = 'true';
}

start().catch((e) => {
  console.error(e);
  main.append(h('p', { class: 'error' }, String(e.message || e)));
});
