// Small helpers every part of the page shares: building DOM (text only, never HTML),
// UUIDs that work outside secure contexts, byte formatting, the JSON API client, and what the
// device remembers.

import { INTERACTIVE, retryDelay, retryAfterMs } from './retry.js';

/** Builds an element. Children that are strings become text nodes, so user text is never HTML. */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith('on') && typeof value === 'function') el.addEventListener(key.slice(2), value);
    else if (key === 'dataset') Object.assign(el.dataset, value);
    else if (key === 'text') el.textContent = value;
    else if (value === true) el.setAttribute(key, '');
    else el.setAttribute(key, String(value));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

/**
 * A random (version 4) UUID from `crypto.getRandomValues`, which, unlike `crypto.randomUUID`,
 * exists on plain http:// LAN addresses too.
 */
export function uuid() {
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const hex = Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/**
 * "12 MB", "1 GB": powers of 1024, as the server's limits are set (a 1 GiB quota reads
 * "1 GB", not "1.07 GB").
 */
export function formatBytes(n, lang = 'en') {
  const units = ['B', 'KB', 'MB', 'GB', 'TB'];
  let i = 0;
  let v = Math.max(0, Number(n) || 0);
  // 1000 and over moves up a unit: "1 GB", never "1.024 MB".
  while (v >= 1000 && i < units.length - 1) {
    v /= 1024;
    i += 1;
  }
  const digits = i === 0 || v >= 10 ? 0 : 1;
  return `${v.toLocaleString(lang, { maximumFractionDigits: digits })} ${units[i]}`;
}

/** An error answer of the API: status, the problem's `code` and the whole problem body. */
export class ApiError extends Error {
  constructor(status, problem, retryAfter) {
    super(problem?.detail || `HTTP ${status}`);
    this.status = status;
    this.code = problem?.code || (status === 0 ? 'network' : 'http_' + status);
    this.problem = problem || {};
    this.retryAfter = retryAfter;
  }
}

/** What a failed answer says to the retry policy: its status, its problem's code, its Retry-After. */
async function failureOf(response) {
  const problem = await response.clone().json().catch(() => null);
  return { status: response.status, code: problem?.code, retryAfterMs: retryAfterMs(response.headers.get('Retry-After')) };
}

/**
 * Calls the JSON API with the page's cookies (or, given `token`, as that bearer: the admin's
 * page). Writes carry an `Idempotency-Key` made once per call and kept for every try, so a
 * write whose answer was lost is sent again without the work being done twice: the server answers the repeat with the first answer. Temporary failures
 * are tried again as the retry policy says (`INTERACTIVE` unless `policy` is given).
 */
export async function api(method, path, body, { policy = INTERACTIVE, token } = {}) {
  const write = method !== 'GET' && method !== 'HEAD';
  const headers = { Accept: 'application/json' };
  if (token) headers.Authorization = `Bearer ${token}`;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  if (write) headers['Idempotency-Key'] = uuid();
  const init = { method, headers, credentials: 'same-origin', body: body === undefined ? undefined : JSON.stringify(body) };
  let response;
  for (let attempts = 1; ; attempts += 1) {
    let failure;
    try {
      response = await fetch(path, init);
      if (response.ok) break;
      failure = await failureOf(response);
    } catch (e) {
      response = null;
      failure = { status: 0, detail: String(e) };
    }
    const wait = retryDelay(policy, attempts, failure);
    if (wait === null) {
      if (!response) throw new ApiError(0, { detail: failure.detail });
      break;
    }
    await new Promise((r) => setTimeout(r, wait));
  }
  if (response.status === 204) return null;
  const text = await response.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!response.ok) throw new ApiError(response.status, data, retryAfterMs(response.headers.get('Retry-After')));
  return data;
}

/** When an upload was taken: its `captured_at` (its upload time when its file does not say). */
export function capturedAt(u) {
  return u.captured_at || u.created_at;
}

/** Reads what this device remembers (null when storage is unavailable, as in private mode). */
export function remembered(key) {
  try {
    return localStorage.getItem(key);
  } catch {
    return null;
  }
}

/** Remembers on this device if it can; a page without storage just forgets. */
export function remember(key, value) {
  try {
    localStorage.setItem(key, value);
  } catch {
    // Private mode: the cookie still keeps the guest joined.
  }
}

/** An Upload's `status`, as the API names it (`hidden` stands in for the others while an
 *  organiser hides the photo). */
export const STATUS = Object.freeze({ PROCESSING: 'processing', READY: 'ready', FAILED: 'failed', HIDDEN: 'hidden' });

/** An Upload's `kind`. */
export const KIND = Object.freeze({ PHOTO: 'photo', VIDEO: 'video' });

export function isVideo(u) {
  return u?.kind === KIND.VIDEO;
}

/** A video's duration as a clock shows it: `m:ss` (`h:mm:ss` from an hour); '' when unknown. */
export function durationText(seconds) {
  if (typeof seconds !== 'number' || !Number.isFinite(seconds) || seconds < 0) return '';
  const total = Math.round(seconds);
  const s = String(total % 60).padStart(2, '0');
  const m = Math.floor(total / 60) % 60;
  const hours = Math.floor(total / 3600);
  return hours ? `${hours}:${String(m).padStart(2, '0')}:${s}` : `${m}:${s}`;
}

/** An Upload's `review`: `pending` while it waits for the organiser's approval (the review gate). */
export const REVIEW = Object.freeze({ PENDING: 'pending', APPROVED: 'approved' });

/**
 * A tile's image: the thumbnail, or null while it is being made (or could not be made). Never
 * the original: a phone's photo is megabytes, and a grid of them is what stalls a party's Wi-Fi.
 */
export function thumbUrl(u) {
  return u.urls?.thumb || null;
}
/** The lightbox's and the slideshow's image: the preview once it exists, else the original. */
export function previewUrl(u) {
  return u.urls?.preview || u.urls?.original;
}

/** The page: `/admin`, or the slug in `/e/{slug}`, `/e/{slug}/organiser` or `/e/{slug}/screen`; else home. */
export function routeOf(location) {
  if (/^\/admin\/?$/.test(location.pathname)) return { page: 'admin' };
  const m = /^\/e\/([^/]+)(?:\/(organiser|screen))?\/?$/.exec(location.pathname);
  if (!m) return { page: 'home' };
  return { page: m[2] || 'guest', slug: decodeURIComponent(m[1]) };
}
