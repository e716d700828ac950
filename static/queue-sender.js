// The upload protocol client: how one queue item reaches the server. A photo goes in one
// request (multipart, its key as `client_upload_id` and `Idempotency-Key`); a video, or any file
// over RESUMABLE_THRESHOLD, goes resumably (docs/api.md "Resumable uploads") when the server can.
// The server deduplicates on the item's key either way, so sending again never stores twice.
//
// Used by the page (queue-scheduler.js) and by a service worker: nothing here touches the page
// (no `window`, no DOM). Requests go by XHR where there is one (for upload progress) and by
// fetch elsewhere (a service worker has no XHR).
//
// Every sender ends with what the scheduler's `settle` understands: `{status, problem,
// retryAfter, replayed}` — 200/201 and the Upload (as `problem`) when the server has the file,
// 0 for no answer, the server's refusal otherwise.

/** Files larger than this go resumably even when they are photos (8 MiB). */
export const RESUMABLE_THRESHOLD = 8 * 1024 * 1024;
// Offset mismatches, vanished resources and the like within one try, before the try ends.
const MAX_ROUNDS = 12;
// How long one try waits for another request that is still appending to the same upload
// (a cut connection the server has not noticed yet) before it leaves it to the next try.
const BUSY_WAIT_MS = 90_000;
// An upload request that moves no byte for this long is taken for dead and tried again.
const STALL_MS = 60_000;
// Without upload progress (fetch), a request is given up on after STALL_MS plus its bytes at this rate.
const SLOWEST_BYTES_PER_S = 16 * 1024;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Whether a picked file's declared type is a video's. */
export function isVideoType(type) {
  return typeof type === 'string' && type.startsWith('video/');
}

/** Whether an item goes resumably: the server can, and it is a video or a large file. */
export function goesResumably(item, serverCan) {
  if (!serverCan) return false;
  return isVideoType(item.type) || item.size > RESUMABLE_THRESHOLD;
}

function uploadsPath(slug) {
  return `/api/v1/events/${encodeURIComponent(slug)}/uploads`;
}

/**
 * Sends an item in one request. `onProgress(share)` gets the share of the body sent so far
 * (only where there is upload progress).
 */
export function postUpload(slug, item, onProgress) {
  const form = new FormData();
  // The key first: the server decides on it before reading the file.
  form.append('client_upload_id', item.client_upload_id);
  if (item.caption) form.append('caption', item.caption);
  form.append('file', item.blob, item.name);
  // The same key as the part: known keys are answered before any bytes are stored.
  const headers = { 'Idempotency-Key': item.client_upload_id };
  return uploadRequest(item, 'POST', uploadsPath(slug), headers, form, (e) => {
    if (e.lengthComputable && e.total > 0) onProgress(e.loaded / e.total);
  }, item.size);
}

/**
 * Asks the server whether it has the upload under an item's key (the by-client-id preflight):
 * `{status, body, retryAfter}` — 200 and the Upload, 404 when it has not, 0 for no answer.
 */
export async function lookUp(slug, key) {
  const r = await request('GET', `${uploadsPath(slug)}/by-client-id/${encodeURIComponent(key)}`);
  return { status: r.status, body: r.body, retryAfter: r.headers.get('Retry-After') };
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

/** The path of a `Location` on this origin (the page may be reached by another address than the server's public URL). */
function samePath(location) {
  const url = new URL(location, globalThis.location.href);
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
export async function request(method, url, headers = {}, body = undefined) {
  try {
    const response = await fetch(url, { method, headers: { Accept: 'application/json', ...headers }, body, credentials: 'same-origin', cache: 'no-store' });
    const parsed = method === 'HEAD' ? null : await bodyOf(response);
    return { status: response.status, headers: response.headers, body: parsed };
  } catch {
    return { status: 0, headers: new Headers(), body: null };
  }
}

function answer(r) {
  return { status: r.status, problem: r.body, retryAfter: r.headers.get('Retry-After'), replayed: r.headers.get('Idempotent-Replayed') === 'true' };
}

/**
 * Sends one queue item resumably. `queue` provides `slug`, `save(item)` and `progressed(item,
 * sentBytes, loaded)` (a byte count that left the page, for the measured rate). The item's
 * `location` and `offset` are kept up to date (and saved).
 *
 * The flow: an empty POST creates the upload resource (its key, name and caption in
 * `Upload-Metadata`), its `Location` is kept in the item (so in IndexedDB, across reloads); one
 * PATCH then sends the rest of the file from the server's offset. After any interruption the
 * next try asks the resource (HEAD) how many bytes it kept and sends only the rest. Creating
 * the resource again (after it expired) never stores the file twice: the key keeps it one upload.
 */
export async function sendResumable(queue, item) {
  const base = `${uploadsPath(queue.slug)}/resumable`;
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
      if (flag(r.headers.get('Upload-Complete'))) return storedUpload(queue.slug, item);
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
async function storedUpload(slug, item) {
  const r = await lookUp(slug, item.client_upload_id);
  if (r.status === 200) return { status: 200, problem: r.body, replayed: true };
  // Not readable right now: the next try asks again.
  if (r.status === 404) return { status: 503, problem: r.body };
  return { status: r.status, problem: r.body, retryAfter: r.retryAfter };
}

/** The PATCH with the rest of the file from `offset`. */
function patch(queue, item, offset) {
  let loaded = 0;
  const headers = { 'Content-Type': 'application/partial-upload', 'Upload-Offset': String(offset), 'Upload-Complete': '?1' };
  const body = item.blob.slice(offset);
  return uploadRequest(item, 'PATCH', item.location, headers, body, (e) => {
    const sent = Math.max(0, e.loaded - loaded);
    loaded = e.loaded;
    item.offset = offset;
    queue.progressed(item, sent, loaded);
  }, body.size);
}

/**
 * Sends one upload request: resolves with `{status, problem, retryAfter, replayed, offset}` —
 * status 0 when no answer came, or when the request stalled (then it is given up on, to be
 * tried again). By XHR where there is one, for its upload progress; by fetch elsewhere.
 */
function uploadRequest(item, method, url, headers, body, onProgress, size) {
  if (typeof globalThis.XMLHttpRequest === 'function') return xhrRequest(item, method, url, headers, body, onProgress);
  return fetchRequest(method, url, headers, body, size, onProgress);
}

/** XHR: a request that moves no byte for STALL_MS is aborted. The XHR is kept as `item.xhr` while it runs. */
function xhrRequest(item, method, url, headers, body, onProgress) {
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

/**
 * fetch, where there is no XHR (a service worker): no upload progress, so the request is given
 * up on after STALL_MS plus its size at SLOWEST_BYTES_PER_S; progress is reported once, whole, at the end.
 */
async function fetchRequest(method, url, headers, body, size, onProgress) {
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), STALL_MS + ((size || 0) / SLOWEST_BYTES_PER_S) * 1000);
  try {
    const response = await fetch(url, { method, headers: { Accept: 'application/json', ...headers }, body, credentials: 'same-origin', cache: 'no-store', signal: abort.signal });
    const problem = await bodyOf(response);
    if (size) onProgress({ lengthComputable: true, loaded: size, total: size });
    return { status: response.status, problem, retryAfter: response.headers.get('Retry-After'), replayed: response.headers.get('Idempotent-Replayed') === 'true', offset: offsetOf(response.headers) };
  } catch {
    return { status: 0 };
  } finally {
    clearTimeout(timer);
  }
}

/** Cancels an item's upload resource on the server (best effort: it expires anyway). */
export function cancelResumable(location) {
  if (!location) return Promise.resolve();
  return fetch(location, { method: 'DELETE', credentials: 'same-origin', keepalive: true }).then(
    () => {},
    () => {},
  );
}
