// The upload queue: every chosen photo is written to IndexedDB before any request is made,
// with a key (`client_upload_id`) made once for it, and sent with that same key until the
// server has it. The server deduplicates on the key, so a retry after a lost answer never
// stores a photo twice; before re-sending bytes the queue asks the server whether it already
// has the photo (the by-client-id preflight) and, if so, sends nothing.
//
// Item: {client_upload_id, event, blob, name, type, size, caption, state, attempts,
//        last_error, problem, final, next_at, created_at, fingerprint, batch}
// `batch`: when the files it was chosen with were chosen. Finished items leave the queue, but
// their `sent` entries keep the batch, whether it was a video, and its size: the summary counts
// the whole batch across reloads (`batchDone`).
// state: queued | uploading | done | failed.
//   queued: waiting — for a free slot, for the connection, or for the next automatic try after a
//           temporary failure (no answer, 5xx, 408/429, the same key in flight): nothing to do.
//   failed, not `final`: temporary, but the next automatic try is far off while the phone says
//           it is online (retry.js `tapMayHelp`): the "Send now" button may help.
//   failed, `final`: the server refused the photo for good (not an image, too large, quota,
//           uploads closed): never sent again by itself; the guest may remove it.
// Videos and large files go resumably when the server can (below): such an item also
// keeps `location` (its upload resource on the server) and `offset` (the bytes the server is
// known to have), so a cut, a reload or a retry sends only the rest.

import { uuid, remembered } from './util.js';
import { BACKGROUND, isTemporary, retryDelay, retryAfterMs, tapMayHelp } from './retry.js';

const DB_NAME = 'confetti';
const DB_VERSION = 1;
const QUEUE = 'queue';
// Keys (and file fingerprints) of photos the server has: a late copy of a queue item, or the
// same file chosen again, is recognised as already uploaded. Kept for a week.
const SENT = 'sent';
const SENT_KEEP_MS = 7 * 24 * 3600 * 1000;

export const PARALLEL = 2;
// The upload rate is measured once this much sending time has passed.
const RATE_AFTER_MS = 2000;

/** Files larger than this go resumably even when they are photos (8 MiB). */
export const RESUMABLE_THRESHOLD = 8 * 1024 * 1024;
// Offset mismatches, vanished resources and the like within one try, before the try ends.
const MAX_ROUNDS = 12;
// How long one try waits for another request that is still appending to the same upload
// (a cut connection the server has not noticed yet) before it leaves it to the next try.
const BUSY_WAIT_MS = 90_000;
// An upload request that moves no byte for this long is taken for dead and tried again.
const STALL_MS = 60_000;

function openDb() {
  return new Promise((resolve, reject) => {
    if (!('indexedDB' in window)) return reject(new Error('no IndexedDB'));
    const req = indexedDB.open(DB_NAME, DB_VERSION);
    req.onupgradeneeded = () => {
      const db = req.result;
      if (!db.objectStoreNames.contains(QUEUE)) db.createObjectStore(QUEUE, { keyPath: 'client_upload_id' }).createIndex('event', 'event');
      if (!db.objectStoreNames.contains(SENT)) db.createObjectStore(SENT, { keyPath: 'client_upload_id' }).createIndex('event', 'event');
    };
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
    req.onblocked = () => reject(new Error('IndexedDB blocked'));
  });
}

/** Runs `fn(stores)` in one transaction; resolves with fn's result once the transaction committed. */
function transact(db, names, mode, fn) {
  return new Promise((resolve, reject) => {
    const tx = db.transaction(names, mode);
    const stores = Object.fromEntries(names.map((n) => [n, tx.objectStore(n)]));
    let result;
    try {
      result = fn(stores);
    } catch (e) {
      tx.abort();
      reject(e);
      return;
    }
    tx.oncomplete = () => resolve(result);
    tx.onerror = () => reject(tx.error);
    tx.onabort = () => reject(tx.error || new Error('transaction aborted'));
  });
}

function getAll(index, key) {
  return new Promise((resolve, reject) => {
    const req = index.getAll(key);
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}

export function fingerprint(file) {
  return `${file.name}|${file.size}|${file.lastModified || 0}`;
}

export class UploadQueue {
  /**
   * @param {object} o
   * @param {string} o.slug the event
   * @param {(item) => void} o.onChange called whenever an item's state or progress changes
   * @param {(item) => void} o.onDone called once per item the server has
   * @param {() => void} o.onUnauthenticated the guest's session is gone: ask for the name again
   * @param {{max_upload_bytes?: number, max_video_bytes?: number, preflight?: boolean, resumable?: boolean}} o.limits
   *   `resumable`: the server lists `resumable_uploads`; when not given, the server's
   *   capabilities the page remembered from `/api/v1/info` say.
   */
  constructor({ slug, onChange, onDone, onUnauthenticated, limits = {} }) {
    this.slug = slug;
    this.onChange = onChange || (() => {});
    this.onDone = onDone || (() => {});
    this.onUnauthenticated = onUnauthenticated || (() => {});
    this.limits = limits;
    this.resumable = limits.resumable ?? rememberedCapability('resumable_uploads');
    this.items = new Map();
    this.active = 0;
    this.paused = true;
    this.timer = null;
    this.db = null;
    this.sent = new Map();
    // Keys of items whose caption the guest is writing right now: they wait until the guest is done.
    this.held = new Set();
    // What the last answer (or its absence) says about the way to the server: null (fine),
    // 'network' (no answer) or 'server' (a temporary refusal). Cleared by the next answer.
    this.trouble = null;
    // Bytes that left this page and the time spent sending them: the measured rate.
    this.bytesSent = 0;
    this.sendingMs = 0;
    this.sendingSince = null;
  }

  /** Bytes per second measured so far, or null before there is enough to go on. */
  rate() {
    const ms = this.sendingMs + (this.sendingSince === null ? 0 : Date.now() - this.sendingSince);
    if (ms < RATE_AFTER_MS || this.bytesSent <= 0) return null;
    return this.bytesSent / (ms / 1000);
  }

  /** Opens IndexedDB and restores this event's queue: items a closed tab left are sent again. */
  async load() {
    try {
      this.db = await openDb();
    } catch (e) {
      console.warn('IndexedDB unavailable; the queue lives in this page only', e);
      return [];
    }
    const cutoff = Date.now() - SENT_KEEP_MS;
    const { queued, sent } = await transact(this.db, [QUEUE, SENT], 'readonly', (s) => ({
      queued: getAll(s[QUEUE].index('event'), this.slug),
      sent: getAll(s[SENT].index('event'), this.slug),
    })).then(async (r) => ({ queued: await r.queued, sent: await r.sent }));
    const stale = [];
    for (const entry of sent) {
      if (entry.done_at < cutoff) stale.push(entry.client_upload_id);
      else this.sent.set(entry.client_upload_id, entry);
    }
    const finished = [];
    for (const item of queued.sort((a, b) => a.created_at - b.created_at)) {
      if (this.sent.has(item.client_upload_id) || item.state === 'done') {
        finished.push(item.client_upload_id);
        continue;
      }
      // A tab closed mid-upload: the bytes may or may not have arrived; `attempts` > 0
      // makes the next send ask the server first.
      if (item.state === 'uploading') item.state = 'queued';
      item.progress = keptShare(item);
      this.items.set(item.client_upload_id, item);
    }
    if (stale.length || finished.length) {
      await transact(this.db, [QUEUE, SENT], 'readwrite', (s) => {
        for (const key of stale) s[SENT].delete(key);
        for (const key of finished) s[QUEUE].delete(key);
      });
    }
    return [...this.items.values()];
  }

  /** Queues files: each is stored in IndexedDB (awaited) before anything is sent. */
  async add(files) {
    const now = Date.now();
    const fresh = [];
    const known = new Set([...this.items.values()].filter((i) => i.state !== 'failed' || !i.final).map((i) => i.fingerprint));
    for (const entry of this.sent.values()) known.add(entry.fingerprint);
    Array.from(files).forEach((file, i) => {
      const fp = fingerprint(file);
      const item = {
        client_upload_id: uuid(),
        event: this.slug,
        blob: file,
        name: file.name || `photo-${now}-${i}.jpg`,
        type: file.type || '',
        size: file.size,
        caption: null,
        state: 'queued',
        attempts: 0,
        last_error: null,
        problem: null,
        final: false,
        next_at: 0,
        created_at: now + i,
        fingerprint: fp,
        progress: 0,
        batch: now,
      };
      if (known.has(fp)) {
        // The same file (name, size, time) was sent or queued already: say so, send nothing.
        item.state = 'done';
        item.already = true;
        item.duplicate_of_choice = true;
      }
      known.add(fp);
      fresh.push(item);
    });
    const toStore = fresh.filter((i) => i.state === 'queued');
    if (this.db && toStore.length) {
      try {
        await transact(this.db, [QUEUE], 'readwrite', (s) => {
          for (const item of toStore) s[QUEUE].put(this.record(item));
        });
      } catch (e) {
        // The device's storage is full: send them anyway, from this page only.
        console.warn('could not store chosen photos; they are kept in this page only', e);
      }
    }
    for (const item of fresh) {
      this.items.set(item.client_upload_id, item);
      this.onChange(item);
    }
    this.pump();
    return fresh;
  }

  /** What IndexedDB keeps of an item (not the in-page progress or upload). */
  record(item) {
    const { progress, upload, xhr, ...rest } = item;
    return rest;
  }

  async save(item) {
    if (!this.db || item.state === 'done') return;
    try {
      await transact(this.db, [QUEUE], 'readwrite', (s) => s[QUEUE].put(this.record(item)));
    } catch (e) {
      console.warn('could not save a queue item', e);
    }
  }

  /** Starts sending (after joining); stops when the session turns out to be gone. */
  start() {
    this.paused = false;
    this.pump();
  }

  /** Sends now, whatever the backoff said (the retry button, the `online` event). */
  retry(key) {
    const item = this.items.get(key);
    if (!item || item.state === 'done' || item.state === 'uploading') return;
    item.final = false;
    item.next_at = 0;
    item.state = 'queued';
    item.last_error = null;
    item.problem = null;
    this.onChange(item);
    this.save(item);
    this.pump();
  }

  /** Every waiting, non-final item goes now: the connection came back. */
  retryAll() {
    for (const item of this.items.values()) {
      if ((item.state === 'failed' && !item.final) || item.state === 'queued') item.next_at = 0;
    }
    this.pump();
  }

  pending() {
    return [...this.items.values()].filter((i) => i.state === 'queued' || i.state === 'uploading' || (i.state === 'failed' && !i.final));
  }

  pump() {
    clearTimeout(this.timer);
    this.timer = null;
    if (this.paused) return;
    const online = navigator.onLine !== false;
    const now = Date.now();
    const waiting = [...this.items.values()]
      .filter((i) => (i.state === 'queued' || (i.state === 'failed' && !i.final)))
      .sort((a, b) => a.created_at - b.created_at);
    if (online) {
      for (const item of waiting) {
        if (this.active >= PARALLEL) break;
        if (item.next_at <= now && !this.held.has(item.client_upload_id)) this.send(item);
      }
    }
    const next = waiting.filter((i) => i.state !== 'uploading' && i.next_at > now).reduce((m, i) => Math.min(m, i.next_at), Infinity);
    if (online && next !== Infinity) this.timer = setTimeout(() => this.pump(), Math.max(50, next - now));
  }

  async send(item) {
    if (this.active === 0) this.sendingSince = Date.now();
    this.active += 1;
    item.state = 'uploading';
    item.progress = keptShare(item);
    item.last_error = null;
    this.onChange(item);
    try {
      await this.attempt(item);
    } catch (e) {
      console.error('upload attempt failed unexpectedly', e);
      await this.retryLater(item, 'network', { status: 0 });
    } finally {
      this.active -= 1;
      if (this.active === 0 && this.sendingSince !== null) {
        this.sendingMs += Date.now() - this.sendingSince;
        this.sendingSince = null;
      }
      this.pump();
    }
  }

  async attempt(item) {
    // A video has a limit of its own (the server tells them apart by the bytes, the page by the type).
    const max = isVideoType(item.type) ? this.limits.max_video_bytes : this.limits.max_upload_bytes;
    if (max && item.size > max) {
      return this.fail(item, 'file_too_large', { limit_bytes: max });
    }
    if (goesResumably(item, this.resumable)) {
      // Its own creation answers for a file the server has already; no preflight needed.
      item.attempts += 1;
      await this.save(item);
      return this.settle(item, await sendResumable(this, item));
    }
    if (item.attempts > 0 && this.limits.preflight !== false) {
      // Sent before: its answer may have been lost after the server stored it.
      const known = await this.preflight(item);
      if (known === 'stop') return;
    }
    item.attempts += 1;
    await this.save(item);
    const res = await this.post(item);
    return this.settle(item, res);
  }

  /**
   * A resumable item moved on: `sent` more bytes left the page, `loaded` of this request's body
   * so far; its progress counts what the server kept from earlier tries too.
   */
  progressed(item, sent, loaded = 0) {
    this.bytesSent += sent;
    item.progress = item.size > 0 ? Math.min(1, ((item.offset || 0) + loaded) / item.size) : 0;
    this.onChange(item);
  }

  /** Asks the server whether it already has this item. 'stop' when that settled the item. */
  async preflight(item) {
    let response;
    try {
      response = await fetch(`/api/v1/events/${encodeURIComponent(this.slug)}/uploads/by-client-id/${item.client_upload_id}`, {
        credentials: 'same-origin',
        headers: { Accept: 'application/json' },
      });
    } catch {
      await this.retryLater(item, 'network', { status: 0 });
      return 'stop';
    }
    if (response.status === 200) {
      const upload = await response.json().catch(() => null);
      await this.done(item, upload, true);
      return 'stop';
    }
    if (response.status === 404) return 'send';
    const problem = await response.json().catch(() => null);
    return this.settle(item, { status: response.status, problem, retryAfter: response.headers.get('Retry-After') }).then(() => 'stop');
  }

  post(item) {
    const form = new FormData();
    // The key first: the server decides on it before reading the file.
    form.append('client_upload_id', item.client_upload_id);
    if (item.caption) form.append('caption', item.caption);
    form.append('file', item.blob, item.name);
    // The same key as the part: known keys are answered before any bytes are stored.
    const headers = { 'Idempotency-Key': item.client_upload_id };
    return uploadRequest(item, 'POST', `/api/v1/events/${encodeURIComponent(this.slug)}/uploads`, headers, form, (e) => {
      if (e.lengthComputable && e.total > 0) {
        const progress = e.loaded / e.total;
        this.bytesSent += Math.max(0, progress - (item.progress || 0)) * item.size;
        item.progress = progress;
        this.onChange(item);
      }
    });
  }

  /** Ends one try: done, the session gone, another try later (as the retry policy says), or a refusal for good. */
  async settle(item, { status, problem, retryAfter, replayed }) {
    const code = problem?.code;
    if (status === 200 || status === 201) return this.done(item, problem, replayed || status === 200);
    if (status === 401) {
      item.state = 'queued';
      item.next_at = 0;
      this.paused = true;
      this.onChange(item);
      await this.save(item);
      this.onUnauthenticated();
      return;
    }
    const failure = { status, code, retryAfterMs: retryAfterMs(retryAfter) };
    if (status === 0) return this.retryLater(item, 'network', failure);
    this.trouble = null;
    const label = code || `http_${status}`;
    if (isTemporary(failure)) return this.retryLater(item, label, failure, problem);
    // 400, 403, 409 (another guest's key), 410, 413, 415, 422: sending again would not help.
    return this.fail(item, label, problem || { status });
  }

  async done(item, upload, already) {
    this.trouble = null;
    item.location = null;
    item.state = 'done';
    item.progress = 1;
    item.final = false;
    item.already = Boolean(already);
    item.upload = upload || null;
    item.last_error = null;
    item.problem = null;
    const entry = {
      client_upload_id: item.client_upload_id,
      event: this.slug,
      upload_id: upload?.id || null,
      fingerprint: item.fingerprint,
      done_at: Date.now(),
      batch: item.batch ?? null,
      video: isVideoType(item.type),
      size: item.size,
      already: Boolean(already),
    };
    this.sent.set(item.client_upload_id, entry);
    if (this.db) {
      try {
        // Pruned from the queue; its key stays in `sent` to recognise late duplicates.
        await transact(this.db, [QUEUE, SENT], 'readwrite', (s) => {
          s[QUEUE].delete(item.client_upload_id);
          s[SENT].put(entry);
        });
      } catch (e) {
        console.warn('could not prune a finished queue item', e);
      }
    }
    this.onChange(item);
    this.onDone(item);
  }

  /**
   * Waits for the next try. The retry policy says how long; the queue never gives up on a
   * temporary failure (offline, the `online` event sends it at once). The item waits as
   * `queued`; only when the next try is far off while the phone is online does it become
   * `failed` (not final), with the "Send now" button.
   */
  async retryLater(item, code, failure, problem = null) {
    const wait = retryDelay(BACKGROUND, item.attempts, failure) ?? 0;
    this.trouble = failure.status === 0 ? 'network' : 'server';
    item.state = tapMayHelp(BACKGROUND, wait) ? 'failed' : 'queued';
    item.final = false;
    item.last_error = code;
    item.problem = problem || { status: failure.status };
    item.next_at = Date.now() + wait;
    this.onChange(item);
    await this.save(item);
  }

  async fail(item, code, problem) {
    // A refusal for good: the server's upload resource (if it kept one) is of no more use.
    if (item.location) {
      cancelResumable(item.location);
      item.location = null;
      item.offset = 0;
    }
    item.state = 'failed';
    item.progress = 0;
    item.final = true;
    item.last_error = code;
    item.problem = problem;
    item.next_at = 0;
    this.onChange(item);
    await this.save(item);
  }

  /**
   * What the server has of the batches the listed items belong to, beyond those items: the
   * photos and videos sent before a reload (their items left the queue), as `{video, size,
   * already}`.
   */
  batchDone() {
    const batches = new Set([...this.items.values()].map((i) => i.batch).filter((b) => b != null));
    return [...this.sent.values()].filter((e) => batches.has(e.batch) && !this.items.has(e.client_upload_id));
  }

  /** Forgets that a deleted upload was sent, so choosing the same file again sends it anew. */
  async forgetUpload(uploadId) {
    const keys = [...this.sent.values()].filter((e) => e.upload_id === uploadId).map((e) => e.client_upload_id);
    for (const key of keys) this.sent.delete(key);
    if (this.db && keys.length) {
      await transact(this.db, [SENT], 'readwrite', (s) => {
        for (const key of keys) s[SENT].delete(key);
      }).catch(() => {});
    }
  }

  /**
   * Whether an item's caption may still change: it has never been sent. A retry must carry what the
   * first try carried (the server compares them under the key), so the caption is fixed from then on.
   */
  captionEditable(item) {
    return Boolean(item) && item.state === 'queued' && !item.attempts && !item.location;
  }

  /** The guest wrote a photo's caption while it waits: kept with the item (IndexedDB), sent with it. */
  async setCaption(key, text) {
    const item = this.items.get(key);
    if (!this.captionEditable(item)) return false;
    const caption = String(text ?? '').trim();
    item.caption = caption || null;
    await this.save(item);
    return true;
  }

  /** While the guest writes a photo's caption, the photo waits; when they are done, it goes. */
  hold(key, holding) {
    if (holding) this.held.add(key);
    else if (this.held.delete(key)) this.pump();
  }

  /** Uploads are open again: photos refused only because they were closed are sent now. */
  reopened() {
    for (const item of this.items.values()) if (item.state === 'failed' && item.final && item.last_error === 'uploads_closed') this.retry(item.client_upload_id);
  }

  /** Drops a failed item the guest gave up on. */
  async discard(key) {
    const item = this.items.get(key);
    if (!item || item.state === 'uploading') return;
    this.items.delete(key);
    // Bytes of it the server kept for a resumed upload go too.
    if (item.location) cancelResumable(item.location);
    if (this.db) await transact(this.db, [QUEUE], 'readwrite', (s) => s[QUEUE].delete(key)).catch(() => {});
  }
}

/** The share of an item the server is known to have kept (resumable items), 0 otherwise. */
function keptShare(item) {
  return item.location && item.size > 0 ? Math.min(1, (item.offset || 0) / item.size) : 0;
}

/** Whether the server's capabilities, as the page last read them from `/api/v1/info`, list `name`. */
function rememberedCapability(name) {
  try {
    const info = JSON.parse(remembered('confetti.info'));
    return Array.isArray(info?.capabilities) && info.capabilities.includes(name);
  } catch {
    return false;
  }
}

/** Whether a picked file's declared type is a video's. */
export function isVideoType(type) {
  return typeof type === 'string' && type.startsWith('video/');
}

// Resumable uploads (docs/api.md "Resumable uploads"): a video, or any file over
// RESUMABLE_THRESHOLD, is sent in a way that survives a cut connection, a reload or going
// offline without sending again what the server already has.
//
// The flow for one queue item: an empty POST creates the upload resource (its key,
// name and caption in `Upload-Metadata`), its `Location` is kept in the item (so in IndexedDB,
// across reloads); one PATCH then sends the rest of the file from the server's offset. After
// any interruption the next try asks the resource (HEAD) how many bytes it kept and sends only
// the rest. The server deduplicates on the item's key here as for one-request uploads, so
// creating the resource again (after it expired) never stores the file twice.
//
// `sendResumable` ends with what the queue's `settle` understands: `{status, problem,
// retryAfter, replayed}` — 200/201 and the Upload when the server has the file, 0 for no answer,
// the server's refusal otherwise.

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Whether an item goes resumably: the server can, and it is a video or a large file. */
function goesResumably(item, serverCan) {
  if (!serverCan) return false;
  return isVideoType(item.type) || item.size > RESUMABLE_THRESHOLD;
}

/** Standard base64 of a string's UTF-8 bytes, as `Upload-Metadata` carries values. */
function b64(text) {
  const bytes = new TextEncoder().encode(text);
  let s = '';
  for (let i = 0; i < bytes.length; i += 1) s += String.fromCharCode(bytes[i]);
  return btoa(s);
}

/** `Upload-Metadata`: the item's key, file name and (if any) caption. */
function uploadMetadata(item) {
  const pairs = [['client_upload_id', item.client_upload_id], ['filename', item.name]];
  if (item.caption) pairs.push(['caption', item.caption]);
  return pairs.map(([k, v]) => `${k} ${b64(v)}`).join(',');
}

/** A structured-field boolean header (`?1` / `?0`). */
function flag(value) {
  return typeof value === 'string' && value.trim() === '?1';
}

function offsetOf(headers) {
  const n = Number.parseInt(headers.get('Upload-Offset') ?? '', 10);
  return Number.isFinite(n) && n >= 0 ? n : null;
}

/** The path of a `Location` on this page's own origin (the page may be reached by another address than the server's public URL). */
function samePath(location) {
  const url = new URL(location, window.location.href);
  return url.pathname + url.search;
}

async function bodyOf(response) {
  const text = await response.text().catch(() => '');
  try {
    return text ? JSON.parse(text) : null;
  } catch {
    return null;
  }
}

/** One request by fetch, as `{status, headers, body}`; status 0 when no answer came. */
async function request(method, url, headers = {}) {
  try {
    const response = await fetch(url, { method, headers: { Accept: 'application/json', ...headers }, credentials: 'same-origin', cache: 'no-store' });
    const body = method === 'HEAD' ? null : await bodyOf(response);
    return { status: response.status, headers: response.headers, body };
  } catch {
    return { status: 0, headers: new Headers(), body: null };
  }
}

function answer(r) {
  return { status: r.status, problem: r.body, retryAfter: r.headers.get('Retry-After'), replayed: r.headers.get('Idempotent-Replayed') === 'true' };
}

/**
 * Sends one queue item resumably. `queue` provides `slug`, `save(item)` and `progressed(item,
 * sentBytes)` (a byte count that left the page, for the measured rate). The item's `location`
 * and `offset` are kept up to date (and saved).
 */
async function sendResumable(queue, item) {
  const base = `/api/v1/events/${encodeURIComponent(queue.slug)}/uploads/resumable`;
  // The offset to send from, once known; null: ask the resource first.
  let offset = null;
  let busySince = null;
  let rounds = 0;
  const forget = async () => {
    item.location = null;
    item.offset = 0;
    offset = null;
    await queue.save(item);
  };
  for (;;) {
    if (!item.location) {
      if ((rounds += 1) > MAX_ROUNDS) return { status: 503, problem: null };
      const r = await request('POST', base, {
        'Upload-Complete': '?0',
        'Upload-Length': String(item.size),
        'Upload-Metadata': uploadMetadata(item),
      });
      // Stored already (an earlier try's answer was lost): the Upload, replayed.
      if (r.status === 200) return answer(r);
      const location = r.headers.get('Location');
      if (r.status !== 201 || !location) return answer(r);
      item.location = samePath(location);
      offset = offsetOf(r.headers) ?? 0;
      item.offset = offset;
      await queue.save(item);
    } else if (offset === null) {
      const r = await request('HEAD', item.location);
      if (r.status === 404) {
        // Expired or cancelled: a new resource (the key keeps it one upload).
        await forget();
        continue;
      }
      if (r.status === 0 || r.status >= 300) return answer(r);
      if (flag(r.headers.get('Upload-Complete'))) return storedUpload(queue, item);
      offset = offsetOf(r.headers) ?? 0;
      item.offset = offset;
      queue.progressed(item, 0);
    }

    const r = await patch(queue, item, offset);
    if (r.status === 200 || r.status === 201) return r;
    if (r.status === 0) return r;
    const code = r.problem?.code;
    if (r.status === 409 && code === 'upload_offset_mismatch') {
      if ((rounds += 1) > MAX_ROUNDS) return { status: 503, problem: r.problem };
      offset = r.offset ?? r.problem?.['expected-offset'] ?? null;
      continue;
    }
    if (r.status === 409 && code === 'upload_busy') {
      // Another request (an earlier try, cut off) is still appending: wait for it to end.
      busySince ??= Date.now();
      if (Date.now() - busySince > BUSY_WAIT_MS) return { ...r, status: 503 };
      await sleep(Math.max(250, Number(r.retryAfter) * 1000 || 1000));
      offset = null;
      continue;
    }
    if (r.status === 404) {
      if ((rounds += 1) > MAX_ROUNDS) return { status: 503, problem: r.problem };
      await forget();
      continue;
    }
    if (r.status === 204) {
      // The server kept the bytes but does not take the file as complete: ask again.
      if ((rounds += 1) > MAX_ROUNDS) return { status: 503, problem: r.problem };
      offset = null;
      continue;
    }
    return r;
  }
}

/** The Upload of an item whose resource says it is complete (HEAD carries no body). */
async function storedUpload(queue, item) {
  const r = await request('GET', `/api/v1/events/${encodeURIComponent(queue.slug)}/uploads/by-client-id/${item.client_upload_id}`);
  if (r.status === 200) return { status: 200, problem: r.body, replayed: true };
  // Not readable right now: the next try asks again.
  if (r.status === 404) return { status: 503, problem: r.body };
  return answer(r);
}

/** The PATCH with the rest of the file from `offset`, by XHR for its upload progress. */
function patch(queue, item, offset) {
  let loaded = 0;
  const headers = { 'Content-Type': 'application/partial-upload', 'Upload-Offset': String(offset), 'Upload-Complete': '?1' };
  return uploadRequest(item, 'PATCH', item.location, headers, item.blob.slice(offset), (e) => {
    const sent = Math.max(0, e.loaded - loaded);
    loaded = e.loaded;
    item.offset = offset;
    queue.progressed(item, sent, loaded);
  });
}

/**
 * Sends one upload request by XHR (for its upload progress, which fetch does not give):
 * resolves with `{status, problem, retryAfter, replayed, offset}` — status 0 when no answer
 * came, or when no byte moved for STALL_MS (then it is given up on, to be tried again).
 */
function uploadRequest(item, method, url, headers, body, onProgress) {
  return new Promise((resolve) => {
    const xhr = new XMLHttpRequest();
    let last = Date.now();
    const touch = () => {
      last = Date.now();
    };
    const watchdog = setInterval(() => {
      if (Date.now() - last > STALL_MS) xhr.abort();
    }, 5000);
    const finish = (result) => {
      clearInterval(watchdog);
      item.xhr = null;
      resolve(result);
    };
    xhr.open(method, url);
    xhr.setRequestHeader('Accept', 'application/json');
    for (const [name, value] of Object.entries(headers)) xhr.setRequestHeader(name, value);
    xhr.upload.onprogress = (e) => {
      touch();
      onProgress(e);
    };
    xhr.upload.onload = touch;
    xhr.onprogress = touch;
    xhr.onload = () => {
      let problem = null;
      try {
        problem = xhr.responseText ? JSON.parse(xhr.responseText) : null;
      } catch {
        problem = null;
      }
      const n = Number.parseInt(xhr.getResponseHeader('Upload-Offset') ?? '', 10);
      finish({
        status: xhr.status,
        problem,
        retryAfter: xhr.getResponseHeader('Retry-After'),
        replayed: xhr.getResponseHeader('Idempotent-Replayed') === 'true',
        offset: Number.isFinite(n) && n >= 0 ? n : null,
      });
    };
    xhr.onerror = () => finish({ status: 0 });
    xhr.onabort = () => finish({ status: 0 });
    xhr.ontimeout = () => finish({ status: 0 });
    item.xhr = xhr;
    xhr.send(body);
  });
}

/** Cancels an item's upload resource on the server (best effort: it expires anyway). */
function cancelResumable(location) {
  if (!location) return Promise.resolve();
  return fetch(location, { method: 'DELETE', credentials: 'same-origin', keepalive: true }).then(
    () => {},
    () => {},
  );
}
