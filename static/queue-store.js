// The upload queue's storage: IndexedDB, two stores. `queue` holds every chosen photo (its
// bytes as a Blob, its key and its state) until the server has it; `sent` keeps, for a week,
// the keys (and file fingerprints) of photos the server has, so a late copy of a queue item, or
// the same file chosen again, is recognised as already uploaded.
//
// Used by the page (queue-scheduler.js) and by a service worker: nothing here touches the page
// (no `window`, no DOM), only `globalThis.indexedDB`.

const DB_NAME = 'confetti';
const DB_VERSION = 1;
export const QUEUE = 'queue';
export const SENT = 'sent';
/** How long a `sent` entry is kept. */
export const SENT_KEEP_MS = 7 * 24 * 3600 * 1000;

function openDb() {
  return new Promise((resolve, reject) => {
    const idb = globalThis.indexedDB;
    if (!idb) return reject(new Error('no IndexedDB'));
    const req = idb.open(DB_NAME, DB_VERSION);
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

/** What IndexedDB keeps of an item: not the in-page progress, Upload or request. */
export function record(item) {
  const { progress, upload, xhr, ...rest } = item;
  return rest;
}

/** The queue's two stores in one IndexedDB database. Every write resolves once it committed. */
export class QueueStore {
  constructor(db) {
    this.db = db;
  }

  /** Opens the database; rejects where there is no IndexedDB (some private modes). */
  static async open() {
    return new QueueStore(await openDb());
  }

  /** An event's queue items (oldest first) and its `sent` entries, read in one transaction. */
  async load(event) {
    const r = await transact(this.db, [QUEUE, SENT], 'readonly', (s) => ({
      queued: getAll(s[QUEUE].index('event'), event),
      sent: getAll(s[SENT].index('event'), event),
    }));
    const queued = await r.queued;
    return { queued: queued.sort((a, b) => a.created_at - b.created_at), sent: await r.sent };
  }

  /** Removes `sent` entries and queue items by key, in one transaction. */
  prune({ sent = [], queued = [] }) {
    return transact(this.db, [QUEUE, SENT], 'readwrite', (s) => {
      for (const key of sent) s[SENT].delete(key);
      for (const key of queued) s[QUEUE].delete(key);
    });
  }

  /** Writes queue items (all or none). */
  put(items) {
    return transact(this.db, [QUEUE], 'readwrite', (s) => {
      for (const item of items) s[QUEUE].put(record(item));
    });
  }

  /** An item the server has: it leaves the queue and its `entry` goes into `sent`, together. */
  finish(key, entry) {
    return transact(this.db, [QUEUE, SENT], 'readwrite', (s) => {
      s[QUEUE].delete(key);
      s[SENT].put(entry);
    });
  }

  /** One queue item by its key, as last written (by this page, another tab or the service worker); undefined when gone. */
  get(key) {
    return transact(this.db, [QUEUE], 'readonly', (s) => s[QUEUE].get(key)).then((req) => req.result);
  }

    /** Drops a queue item. */
  remove(key) {
    return this.prune({ queued: [key] });
  }
}
