// The guest's page for one event, composed of its views: the cover, welcome text and upload
// window (event-page.js), joining (join-view.js), the greeting and quota (quota-view.js), the
// upload queue (upload-view.js over queue.js), the guestbook (guestbook-view.js) and the gallery (gallery-view.js). This module only puts them together: who the guest is, which views show,
// and what one view's news means for another.

//
// Only joining is imported up front: a guest on their first visit sees the name form while the
// other views still load (the server's page says whether this visitor has joined, `boot`).

import { h, api, ApiError, remember, remembered } from './util.js';
import { t } from './i18n.js';
import { JoinView, joinKey } from './join-view.js';

/** Where this device notes that its guest joined the event (the page then never trusts a kept copy's "not joined"). */
const joinedKey = (slug) => `confetti.joined.${slug}`;

/** The views beside joining, loaded once the name form (if it is needed) shows. */
function views() {
  return Promise.all([
    import('./queue.js'),
    import('./quota-view.js'),
    import('./upload-view.js'),
    import('./gallery-view.js'),
    import('./event-page.js'),
    import('./host-modes-view.js'),
    import('./guestbook-view.js'),
    import('./queue-lock.js'),
    import('./app-worker.js'),
    import('./keep-awake.js'),
  ]).then((modules) => Object.assign({}, ...modules));
}

/** The server's limits and capabilities (from the page itself when it brought them); remembered for pages opened while offline. */
async function serverInfo(boot) {
  try {
    const info = boot?.info ?? (await api('GET', '/api/v1/info'));
    remember('confetti.info', JSON.stringify(info));
    return info;
  } catch {
    try {
      return JSON.parse(remembered('confetti.info')) || {};
    } catch {
      return {};
    }
  }
}

/**
 * @param {object} o
 * @param {string} o.slug the event
 * @param {object} o.event the event as the server describes it to guests
 * @param {HTMLElement} o.main where the page goes
 * @param {import('./messages.js').MessageArea} o.messages the page's message area
 */
export async function guestPage({ slug, event, main, messages, boot }) {
  const tokenFromLink = new URLSearchParams(location.search).get('join');
  if (tokenFromLink) {
    remember(joinKey(slug), tokenFromLink);
    // The token stays on this device, not in the address bar (or a screenshot of it).
    history.replaceState(null, '', location.pathname);
  }

  // A new visitor's page came with the name form already in place (the server's first-visit
  // page): this page's own form takes its place, with what the guest typed meanwhile.
  const early = main.querySelector('[data-first-visit] input[name=display_name]');
  const typed = early ? { value: early.value, focused: document.activeElement === early } : null;

  const pageSection = h('section', { class: 'event-page' });
  const joinSection = h('section', { class: 'card join', hidden: true });
  const uploadSection = h('section', { class: 'uploader', hidden: true });
  const guestbookSection = h('section', { class: 'card guestbook', hidden: true });
  const gallerySection = h('section', { class: 'gallery-section', hidden: true });
  main.replaceChildren(pageSection, joinSection, uploadSection, guestbookSection, gallerySection);

  // A guest the server does not know yet is asked for a name at once; sending it waits for the
  // rest of the page.
  let ready;
  const entering = new Promise((resolve) => {
    ready = resolve;
  });
  const join = new JoinView({ slug, section: joinSection, onJoined: async () => (await entering)() });
  if (typed?.value) join.name.value = typed.value;
  // A page that says "not joined" may be a copy the service worker kept from before the guest
  // joined on this phone: then the server is asked (and, with no connection, the queue shows).
  const joinedHere = remembered(joinedKey(slug)) === '1';
  const bootSaysNew = Boolean(boot && !boot.me && !joinedHere);
  if (bootSaysNew) join.show();
  else if (typed?.focused) join.name.focus();

  const [info, v] = await Promise.all([serverInfo(boot), views()]);
  const { UploadQueue, QuotaView, UploadView, GalleryView, EventPageView, uploadState, HostModesView, GuestbookView } = v;
  const caps = info.capabilities || ['client_upload_id', 'upload_preflight'];
  let me = null;
  // In a secure context: the service worker (offline page, shares, sending with the page closed)
  // and the switch that keeps the screen on while sending. Neither exists on http:// LAN addresses.
  let background = null;
  let awake = null;

  // The queue first, so that nothing waits unseen. Each photo is sent under its lock: the
  // service worker may be sending the same queue.
  const Queue = v.withItemLocks(UploadQueue);
  const queue = new Queue({
    slug,
    limits: {
      max_upload_bytes: info.limits?.max_upload_bytes,
      max_video_bytes: info.limits?.max_video_bytes,
      preflight: caps.includes('upload_preflight'),
      resumable: caps.includes('resumable_uploads'),
      known: caps.includes('known_uploads'),
    },
    onChange: (item) => {
      uploads.render(item);
      background?.changed(item);
      awake?.update();
      // A refusal tells what the event said before: uploads are closed.
      if (item.state === 'failed' && item.final && item.last_error === 'uploads_closed') uploadsOpen(false);
      // The hosts blocked this guest: the page says so instead of offering to send.
      if (item.state === 'failed' && item.final && item.last_error === 'guest_blocked') uploads.setBlocked(true);
    },
    onDone: (item) => {
      refreshMe();
      if (item.upload) gallery.upsert(item.upload);
    },
    onUnauthenticated: () => showJoin(t('err_unauthenticated')),
  });
  const page = new EventPageView(pageSection);
  const quota = new QuotaView(uploadSection);
  const uploads = new UploadView({ queue, info, event, section: uploadSection });
  if (v.workerPossible()) {
    background = new v.BackgroundSending({ slug, queue, registration: v.registerWorker() });
    new v.InstallOffer(uploadSection);
  }
  if (v.keepAwakePossible()) awake = new v.KeepAwake({ section: uploadSection, queue });
  const gallery = new GalleryView(gallerySection);
  const guestbook = new GuestbookView(guestbookSection, { slug });
  // The host modes: what the guest is told above the gallery, and the gallery opening on time.
  const modes = new HostModesView(gallerySection, { slug, onOpened: () => gallery.reload() });
  modes.update(event);

  // Whether uploads are open, as the event says (the organiser's switch and the upload window):
  // the picker says so before a photo is chosen, and changes by itself when the window opens or
  // ends. While they are closed the page asks again now and then (and when the guest comes back
  // to it); once they open, photos refused only because they were closed go by themselves.
  let recheck = null;
  function uploadsOpen(open, why = open ? null : { kind: 'closed' }) {
    const reopened = open && !uploads.open;
    uploads.setOpen(open, why);
    clearInterval(recheck);
    recheck = open ? null : setInterval(checkEvent, 30_000);
    if (reopened) queue.reopened();
  }
  let current = event;
  let turn = null;
  function showEvent(next) {
    current = next;
    page.render(current);
    const state = uploadState(current);
    uploadsOpen(state.open, state.why);
    clearTimeout(turn);
    // A timer fires once, at most ~24 days ahead; a longer wait is looked at again then.
    if (state.next !== null) turn = setTimeout(() => showEvent(current), Math.min(Math.max(0, state.next - Date.now()) + 250, 2 ** 31 - 1));
  }
  async function checkEvent() {
    if (document.visibilityState === 'hidden') return;
    try {
      const now = await api('GET', `/api/v1/events/${encodeURIComponent(slug)}`);
      showEvent(now);
      modes.update(now);
    } catch {
      // Offline or not found: what the page knew stays.
    }
  }
  showEvent(event);

  window.addEventListener('online', () => {
    queue.retryAll();
    if (!uploads.open) checkEvent();
  });
  // Timers sleep while a phone's screen is locked: look again when the page is back.
  document.addEventListener('visibilitychange', () => {
    if (document.visibilityState !== 'visible') return;
    queue.pump();
    // The hosts may have changed uploads or the gallery's modes meanwhile.
    checkEvent();
  });

  function showJoin(message) {
    uploadSection.hidden = true;
    gallerySection.hidden = true;
    guestbookSection.hidden = true;
    join.show(message);
  }

  function showMe(known) {
    me = known;
    remember(joinedKey(slug), '1');
    quota.render(me);
    uploads.setBlocked(Boolean(me.blocked));
    guestbook.setBlocked(Boolean(me.blocked));
  }

  async function refreshMe() {
    try {
      showMe(await api('GET', '/api/v1/me'));
    } catch (e) {
      if (e instanceof ApiError && e.status === 401) showJoin();
    }
  }

  ready(() => enter());
  /** The guest's views; `known`: who the guest is, when that was just learnt. */
  async function enter(known = null) {
    if (known) showMe(known);
    else await refreshMe();
    if (!me || me.event !== slug) return;
    joinSection.hidden = true;
    uploadSection.hidden = false;
    gallerySection.hidden = false;
    gallery.start({
      queue,
      slug,
      messages,
      viewer: () => ({ guestId: me?.id, downloads: current.guest_downloads !== false }),
      onDeleted: (u) => {
        refreshMe();
        if (u) queue.forgetUpload(u.id);
      },
      // The hosts approved one of the guest's photos: its queue row stops saying it waits.
      onUpload: (u) => {
        for (const item of queue.items.values()) {
          if (item.upload?.id === u.id && item.upload.review !== u.review) {
            item.upload = { ...item.upload, review: u.review };
            uploads.render(item);
          }
        }
      },
    });
    guestbookSection.hidden = false;
    guestbook.start({ me, source: gallery.gallery?.source });
    queue.start();
  }

  // Restore the queue first (it renders at once), then find out who we are.
  const restored = await queue.load();
  for (const item of restored) uploads.render(item);
  awake?.update();
  // A guest who joined while the page loaded (the name form shows before the rest) has their
  // views shown by joining already: what the page learns here is older than that.
  let found;
  try {
    found = boot && (boot.me || bootSaysNew) ? boot.me : await api('GET', '/api/v1/me');
  } catch (e) {
    if (me) return;
    if (!(e instanceof ApiError) || e.status !== 401) {
      // Offline on load (no connection, or the server away while the phone has one, as when
      // the service worker showed the page): show the queue; it goes out once the server
      // answers again, on the `online` event or when asked again (less and less often).
      uploadSection.hidden = false;
      let wait = 2000;
      let timer = null;
      const again = async () => {
        window.removeEventListener('online', again);
        clearTimeout(timer);
        await refreshMe();
        if (me && me.event === slug) return enter(me);
        // The session is gone: the name form shows instead.
        if (!joinSection.hidden) return;
        wait = Math.min(wait * 2, 60_000);
        timer = setTimeout(again, wait);
        window.addEventListener('online', again);
      };
      timer = setTimeout(again, wait);
      window.addEventListener('online', again);
      return;
    }
  }
  if (me) return;
  me = found;
  if (me && me.event === slug) await enter(me);
  // (Shown already when the page said so: a name being typed, or an answer shown, stays.)
  else if (joinSection.hidden) showJoin();
}
