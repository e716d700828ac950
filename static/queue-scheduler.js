// The upload queue's scheduler: every chosen photo is written to IndexedDB (queue-store.js)
// before any request is made, with a key (`client_upload_id`) made once for it, and sent
// (queue-sender.js) with that same key until the server has it. The server deduplicates on the
// key, so a retry after a lost answer never stores a photo twice; before re-sending bytes the
// queue asks the server whether it already has the photo (the by-client-id preflight) and, if
// so, sends nothing. It decides when each item goes: PARALLEL slots, the retry policy
// (retry.js BACKGROUND), and nothing while the device says it is offline.
//
// Used by the page (queue.js) and by a service worker: nothing here touches the page (no
// `window`, no DOM); the page tells it about `online` and visibility by calling `retryAll` and `pump`.
//
// Item: {client_upload_id, event, blob, name, type, size, caption, state, attempts,
//        last_error, problem, final, next_at, created_at, fingerprint, batch}
// `batch`: when the files it was chosen with were chosen. Finished items leave the queue, but
// their `sent` entries keep the batch, whether it was a video, and its size: the summary counts
// the whole batch across reloads (`batchDone`).
// state: queued | uploading | done | failed.
//   queued: waiting — for a free slot, for the connection, or for the next automatic try after a
//           temporary failure (no answer, 5xx, 408/429, the same key in flight): nothing to do.
//   failed, not `final`: temporary, but the next automatic try is far off while the device says
//           it is online (retry.js `tapMayHelp`): the "Send now" button may help.
//   failed, `final`: the server refused the photo for good (not an image, too large, quota,
//           uploads closed): never sent again by itself; the guest may remove it.
// Videos and large files go resumably when the server can (queue-sender.js): such an item also
// keeps `location` (its upload resource on the server) and `offset` (the bytes the server is
// known to have), so a cut, a reload or a retry sends only the rest.
//
// Re-picks: where the server lists `known_uploads`, every chosen file's SHA-256 is computed as it
// is queued (`check: 'hash'`, by the `hash` function given: off the page's main thread), and once
// the whole pick is hashed (`check: 'ask'`) one request asks the server which of those bytes the
// guest has stored already. A file the server names is done as `already` and `recognised`, with
// the server's upload: its own new key is never sent, nothing is stored or charged again. The
// others (`check` cleared) are sent under their own keys as any photo. An item waits while it has
// a `check`; a file that could not be hashed, or a server that refuses the question, is just sent.

import { uuid } from './util.js';
import { BACKGROUND, isTemporary, retryDelay, retryAfterMs, tapMayHelp } from './retry.js';
import { QueueStore, SENT_KEEP_MS } from './queue-store.js';
import { cancelResumable, findKnown, goesResumably, isVideoType, lookUp, postUpload, sendResumable, MAX_KNOWN } from './queue-sender.js';
import { hashBlob } from './sha256.js';

export const PARALLEL = 2;
// How often a server in trouble is asked which picked files it has, before they go unchecked.
const KNOWN_TRIES = 3;
// The upload rate is measured once this much sending time has passed.
const RATE_AFTER_MS = 2000;

/** Whether the device says it is online (a worker has `navigator.onLine` too). */
function online() {
  return globalThis.navigator?.onLine !== false;
}

export function fingerprint(file) {
  return `${file.name}|${file.size}|${file.lastModified || 0}`;
}

/** The share of an item the server is known to have kept (resumable items), 0 otherwise. */
function keptShare(item) {
  return item.location && item.size > 0 ? Math.min(1, (item.offset || 0) / item.size) : 0;
}

export class UploadQueue {
  /**
   * @param {object} o
   * @param {string} o.slug the event
   * @param {(item) => void} o.onChange called whenever an item's state or progress changes
   * @param {(item) => void} o.onDone called once per item the server has
   * @param {() => void} o.onUnauthenticated the guest's session is gone: ask for the name again
   * @param {{max_upload_bytes?: number, max_video_bytes?: number, preflight?: boolean, resumable?: boolean, known?: boolean}} o.limits
   *   `resumable`: the server lists `resumable_uploads`; `known`: it lists `known_uploads` (re-picks are recognised).
   * @param {(blob: Blob) => Promise<string | null>} [o.hash] a file's SHA-256 (hex), null when unreadable;
   *   by default hashed where the queue runs (the page gives a Worker's).
   */
  constructor({ slug, onChange, onDone, onUnauthenticated, limits = {}, hash }) {
    this.slug = slug;
    this.onChange = onChange || (() => {});
    this.onDone = onDone || (() => {});
    this.onUnauthenticated = onUnauthenticated || (() => {});
    this.limits = limits;
    this.resumable = Boolean(limits.resumable);
    this.known = Boolean(limits.known);
    this.hash = hash || ((blob) => hashBlob(blob).catch(() => null));
    // The question which picked files the server has: one at a time; after a failed one, not before `knownAt`.
    this.asking = false;
    this.knownAt = 0;
    this.knownTries = 0;
    this.items = new Map();
    this.active = 0;
    this.paused = true;
    this.timer = null;
    /** @type {QueueStore | null} */
    this.store = null;
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
      this.store = await QueueStore.open();
    } catch (e) {
      console.warn('IndexedDB unavailable; the queue lives in this page only', e);
      return [];
    }
    const cutoff = Date.now() - SENT_KEEP_MS;
    const { queued, sent } = await this.store.load(this.slug);
    const stale = [];
    for (const entry of sent) {
      if (entry.done_at < cutoff) stale.push(entry.client_upload_id);
      else this.sent.set(entry.client_upload_id, entry);
    }
    const finished = [];
    for (const item of queued) {
      if (this.sent.has(item.client_upload_id) || item.state === 'done') {
        finished.push(item.client_upload_id);
        continue;
      }
      // A tab closed mid-upload: the bytes may or may not have arrived; `attempts` > 0
      // makes the next send ask the server first.
      if (item.state === 'uploading') item.state = 'queued';
      // The server no longer answers which files it has: the item just goes.
      if (item.check && !this.known) item.check = null;
      item.progress = keptShare(item);
      this.items.set(item.client_upload_id, item);
    }
    if (stale.length || finished.length) await this.store.prune({ sent: stale, queued: finished });
    // A tab closed while a pick was being hashed: hashed again from the stored bytes.
    const unhashed = [...this.items.values()].filter((i) => i.check === 'hash');
    if (unhashed.length) this.hashPick(unhashed);
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
        check: this.known ? 'hash' : null,
      };
      if (known.has(fp)) {
        // The same file (name, size, time) was sent or queued already: say so, send nothing.
        item.state = 'done';
        item.already = true;
        item.duplicate_of_choice = true;
        item.check = null;
      }
      known.add(fp);
      fresh.push(item);
    });
    const toStore = fresh.filter((i) => i.state === 'queued');
    if (this.store && toStore.length) {
      try {
        await this.store.put(toStore);
      } catch (e) {
        // The device's storage is full: send them anyway, from this page only.
        console.warn('could not store chosen photos; they are kept in this page only', e);
      }
    }
    for (const item of fresh) {
      this.items.set(item.client_upload_id, item);
      this.onChange(item);
    }
    if (this.known && toStore.length) this.hashPick(toStore);
    this.pump();
    return fresh;
  }

  /**
   * Hashes a pick's files, then lets the whole pick ask the server at once (`check: 'ask'`). A
   * file whose bytes an earlier item still in the queue has is a duplicate of that choice: done,
   * nothing sent. A file that could not be read goes without asking.
   */
  async hashPick(items) {
    // One file at a time: a large pick is never read into memory at once.
    const hashes = [];
    for (const item of items) hashes.push(await this.hash(item.blob).catch(() => null));
    const picked = [];
    items.forEach((item, i) => {
      if (this.items.get(item.client_upload_id) !== item || item.check !== 'hash') return;
      item.sha256 = hashes[i] || null;
      item.check = item.sha256 ? 'ask' : null;
      picked.push(item);
    });
    const live = [...this.items.values()].filter((i) => i.sha256 && i.state !== 'done' && !(i.state === 'failed' && i.final));
    for (const item of picked) {
      const first = live.find((i) => i.sha256 === item.sha256 && i.created_at < item.created_at);
      if (!first) continue;
      // The same bytes twice in the queue (under two names): the earlier one sends them.
      item.check = null;
      item.state = 'done';
      item.already = true;
      item.duplicate_of_choice = true;
      if (this.store) await this.store.remove(item.client_upload_id).catch(() => {});
      this.onChange(item);
    }
    const stay = picked.filter((i) => i.state !== 'done');
    if (this.store && stay.length) await this.store.put(stay).catch((e) => console.warn('could not save hashed items', e));
    for (const item of stay) this.onChange(item);
    this.pump();
  }

  /**
   * Asks the server, in one request for all waiting picks (up to MAX_KNOWN files), which of
   * these files' bytes the guest has stored; those are done, the others go. No answer, or a
   * temporary refusal: asked again later, as the retry policy says.
   */
  async askKnown(items) {
    this.asking = true;
    const batch = items.slice(0, MAX_KNOWN);
    let r;
    try {
      r = await findKnown(this.slug, [...new Set(batch.map((i) => i.sha256))]);
    } finally {
      this.asking = false;
    }
    const current = batch.filter((i) => this.items.get(i.client_upload_id) === i && i.check === 'ask');
    if (r.status === 200 && Array.isArray(r.body?.known)) {
      this.trouble = null;
      this.knownTries = 0;
      const stored = new Map(r.body.known.map((u) => [u.sha256, u]));
      const go = [];
      for (const item of current) {
        item.check = null;
        const upload = stored.get(item.sha256);
        if (upload) {
          // Under this item's own key (the service worker sent it while this page loaded, or an
          // answer was lost): already uploaded, as the preflight says, but not a re-pick of an
          // earlier photo.
          item.recognised = upload.client_upload_id !== item.client_upload_id;
          await this.done(item, upload, true);
        } else {
          go.push(item);
        }
      }
      if (this.store && go.length) await this.store.put(go).catch(() => {});
    } else if (r.status === 401) {
      this.paused = true;
      this.onUnauthenticated();
      return;
    } else {
      const failure = { status: r.status, code: r.body?.code, retryAfterMs: retryAfterMs(r.retryAfter) };
      // No answer: the photos could not go either, so they wait for the question as for a send.
      // A server in trouble is asked a few times; then the photos go unchecked rather than wait on it.
      if (isTemporary(failure) && (r.status === 0 || this.knownTries < KNOWN_TRIES - 1)) {
        this.knownTries += 1;
        this.trouble = r.status === 0 ? 'network' : 'server';
        this.knownAt = Date.now() + (retryDelay(BACKGROUND, this.knownTries, failure) ?? 0);
      } else {
        // Refused for good (a server without the question, say): the files go as any photo.
        this.knownTries = 0;
        for (const item of current) item.check = null;
        if (this.store && current.length) await this.store.put(current).catch(() => {});
      }
    }
    for (const item of current) this.onChange(item);
    this.pump();
  }

  async save(item) {
    if (!this.store || item.state === 'done') return;
    try {
      await this.store.put([item]);
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
    this.knownAt = 0;
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
    const isOnline = online();
    const now = Date.now();
    const waiting = [...this.items.values()]
      .filter((i) => (i.state === 'queued' || (i.state === 'failed' && !i.final)))
      .sort((a, b) => a.created_at - b.created_at);
    const asking = waiting.filter((i) => i.check === 'ask');
    if (isOnline) {
      if (asking.length && !this.asking && this.knownAt <= now) this.askKnown(asking);
      for (const item of waiting) {
        if (this.active >= PARALLEL) break;
        if (item.next_at <= now && !item.check && !this.held.has(item.client_upload_id)) this.send(item);
      }
    }
    let next = waiting.filter((i) => i.state !== 'uploading' && !i.check && i.next_at > now).reduce((m, i) => Math.min(m, i.next_at), Infinity);
    if (asking.length && !this.asking && this.knownAt > now) next = Math.min(next, this.knownAt);
    if (isOnline && next !== Infinity) this.timer = setTimeout(() => this.pump(), Math.max(50, next - now));
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
    const res = await postUpload(this.slug, item, (share) => {
      this.bytesSent += Math.max(0, share - (item.progress || 0)) * item.size;
      item.progress = share;
      this.onChange(item);
    });
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
    const r = await lookUp(this.slug, item.client_upload_id);
    if (r.status === 0) {
      await this.retryLater(item, 'network', { status: 0 });
      return 'stop';
    }
    if (r.status === 200) {
      await this.done(item, r.body, true);
      return 'stop';
    }
    if (r.status === 404) return 'send';
    return this.settle(item, { status: r.status, problem: r.body, retryAfter: r.retryAfter }).then(() => 'stop');
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
      sha256: item.sha256 || null,
      done_at: Date.now(),
      batch: item.batch ?? null,
      video: isVideoType(item.type),
      size: item.size,
      already: Boolean(already),
    };
    this.sent.set(item.client_upload_id, entry);
    if (this.store) {
      try {
        // Pruned from the queue; its key stays in `sent` to recognise late duplicates.
        await this.store.finish(item.client_upload_id, entry);
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
   * `queued`; only when the next try is far off while the device is online does it become
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
    if (this.store && keys.length) await this.store.prune({ sent: keys }).catch(() => {});
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
    if (this.store) await this.store.remove(key).catch(() => {});
  }
}
