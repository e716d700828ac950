// The guest page's service worker (served at /sw.js for the scope /e/, registered by
// app-worker.js where the page is a secure context). Three jobs:
// - Keeps the page's files (this build's: `VERSION` and `FILES`, the guest's page, are written in
//   by build.rs, so a new server version is a new worker, which keeps the new files and drops the
//   old ones; the organiser's modules are kept once used), so an
//   event's page opens with no connection and shows the guest's queue from the phone. Pages go
//   to the network first (the copy kept is for when there is none); files under this version
//   come from the copy kept.
// - The share target (the event's manifest): photos and videos shared from another app go into
//   the same IndexedDB queue as picked ones, under keys of their own, and the event's page opens
//   with them queued.
// - Sends the queue when the connection returns with the page closed (Background Sync, the tag
//   `upload:{slug}` that the page registers): the page's own queue (queue-scheduler.js), with its
//   keys, retry policy and resumable uploads, each photo under its lock (queue-lock.js).

import { UploadQueue } from './queue-scheduler.js';
import { withItemLocks } from './queue-lock.js';

const VERSION = 'dev';
const FILES = [];
const CACHE = `confetti-${VERSION}`;
// The page when no copy of the asked-for one is kept: it finds out from its address what to show.
const SHELL = '/';
// How long a page waits for the network before the kept copy is shown (a venue's weak signal).
const PAGE_WAIT_MS = 4000;
// A sync event may run for a few minutes; the worker stops sending before the browser stops it.
const SYNC_BUDGET_MS = 150_000;
const SHARE = /^\/e\/([a-z0-9-]{1,80})\/share$/;
const SendingQueue = withItemLocks(UploadQueue);

self.addEventListener('install', (event) => {
  // The API goes to the network past this worker (static routes, where the browser has them):
  // an upload sent through a worker loses its progress events and crosses one more process.
  if (event.addRoutes && globalThis.URLPattern) {
    event.waitUntil(event.addRoutes({ condition: { urlPattern: new URLPattern({ pathname: '/api/*' }) }, source: 'network' }).catch((e) => console.warn('no static routes', e)));
  }
  event.waitUntil(
    (async () => {
      const cache = await caches.open(CACHE);
      await cache.addAll([SHELL, ...FILES]);
      await self.skipWaiting();
    })(),
  );
});

self.addEventListener('activate', (event) => {
  event.waitUntil(
    (async () => {
      for (const name of await caches.keys()) if (name.startsWith('confetti-') && name !== CACHE) await caches.delete(name);
      await self.clients.claim();
    })(),
  );
});

self.addEventListener('fetch', (event) => {
  const request = event.request;
  const url = new URL(request.url);
  if (url.origin !== self.location.origin) return;
  const share = SHARE.exec(url.pathname);
  if (request.method === 'POST' && share) {
    event.respondWith(shared(request, share[1]));
    return;
  }
  if (request.method !== 'GET') return;
  if (request.mode === 'navigate') event.respondWith(page(event, url));
  else if (url.pathname.startsWith('/static/')) event.respondWith(file(request, url));
});

/** A page: the network's answer (kept for next time), else the copy kept of it, else the shell. */
async function page(event, url) {
  let copy = null;
  const network = fetch(event.request).then((response) => {
    if (response.ok && response.type === 'basic') copy = response.clone();
    return response;
  });
  // Keeping the copy may finish after the page is shown.
  event.waitUntil(
    network
      .then(async () => {
        if (copy) await (await caches.open(CACHE)).put(url.pathname, copy);
      })
      .catch(() => {}),
  );
  const kept = async () => {
    const cache = await caches.open(CACHE);
    return (await cache.match(url.pathname, { ignoreVary: true })) || (await cache.match(SHELL, { ignoreVary: true }));
  };
  const late = new Promise((resolve) => setTimeout(resolve, PAGE_WAIT_MS, 'late'));
  try {
    const first = await Promise.race([network, late]);
    if (first !== 'late' && first.status < 500) return first;
    // A slow network, or a proxy saying the server is away: the copy kept, if there is one.
    return (await kept()) || (first === 'late' ? await network : first);
  } catch {
    return (await kept()) || Response.error();
  }
}

/**
 * One of the page's files: this version's from the copy kept (one not kept yet, as the
 * organiser's modules, is kept once fetched); another version's from the network, else this
 * version's.
 */
async function file(request, url) {
  const cache = await caches.open(CACHE);
  const current = url.pathname.startsWith(`/static/${VERSION}/`);
  if (current) {
    const kept = await cache.match(url.pathname, { ignoreVary: true });
    if (kept) return kept;
  }
  try {
    const response = await fetch(request);
    if (current && response.ok) await cache.put(url.pathname, response.clone()).catch(() => {});
    return response;
  } catch (e) {
    const name = url.pathname.split('/').pop();
    const fallback = await cache.match(`/static/${VERSION}/${name}`, { ignoreVary: true });
    if (fallback) return fallback;
    throw e;
  }
}

/**
 * Photos and videos shared into the event's app: queued (IndexedDB) under new keys, as if
 * picked on its page, then the page opens (303) and sends them. The sync is asked for too, so
 * they go even if the page is closed at once.
 */
async function shared(request, slug) {
  try {
    const form = await request.formData();
    const files = form.getAll('files').filter((f) => typeof f === 'object' && f && f.size > 0);
    const queue = new UploadQueue({ slug });
    await queue.load();
    // The queue is paused until `start`: this stores them and sends nothing.
    await queue.add(files);
    await self.registration.sync?.register(`upload:${slug}`).catch(() => {});
  } catch (e) {
    console.error('could not queue shared files', e);
  }
  return Response.redirect(`/e/${slug}`, 303);
}

self.addEventListener('sync', (event) => {
  if (!event.tag.startsWith('upload:')) return;
  event.waitUntil(sendQueue(event.tag.slice('upload:'.length)));
});

/** Whether the event's page is open and in view: then it sends, and shows what it does. */
async function pageSending(slug) {
  const pages = await self.clients.matchAll({ type: 'window' });
  return pages.some((c) => c.visibilityState === 'visible' && new URL(c.url).pathname === `/e/${slug}`);
}

/**
 * Sends an event's queue until nothing is due: every photo sent, refused for good, or waiting
 * for a later try. Rejects while photos still wait, so the browser fires the sync again later.
 */
async function sendQueue(slug) {
  if (await pageSending(slug)) return;
  const info = await fetch('/api/v1/info', { headers: { Accept: 'application/json' }, cache: 'no-store' }).then((r) => (r.ok ? r.json() : Promise.reject(new Error(`info: ${r.status}`))));
  const caps = info.capabilities || [];
  let unauthenticated = false;
  const queue = new SendingQueue({
    slug,
    limits: {
      max_upload_bytes: info.limits?.max_upload_bytes,
      max_video_bytes: info.limits?.max_video_bytes,
      preflight: caps.includes('upload_preflight'),
      resumable: caps.includes('resumable_uploads'),
    },
    // The guest's session is gone: only the page can ask for the name again.
    onUnauthenticated: () => {
      unauthenticated = true;
    },
  });
  await queue.load();
  queue.start();
  const deadline = Date.now() + SYNC_BUDGET_MS;
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, 250));
    const now = Date.now();
    const due = queue.pending().filter((i) => i.state === 'uploading' || i.next_at <= now + 1000);
    if (unauthenticated || (queue.active === 0 && due.length === 0) || now > deadline) break;
  }
  queue.paused = true;
  const left = queue.pending().length;
  if (left && !unauthenticated) throw new Error(`${left} photos still wait`);
}
