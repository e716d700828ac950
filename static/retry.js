// When a failed request is tried again, and how often: the one policy for the page's API calls
// (util.js `api`) and for the upload queue (queue.js). A failure is temporary when sending the
// same request again later may well succeed — the network, a timeout, too many requests, the
// server's own trouble, or the same Idempotency-Key still being worked on — and permanent
// otherwise (the request itself is refused: sending it again would get the same answer).
//
// Every retried write carries the key it was first sent with, so a retry never does the work
// twice; that is what makes retrying writes safe at all.

/** Statuses that say "not now" rather than "no". */
const TEMPORARY_STATUSES = new Set([408, 429, 502, 503, 504]);

/**
 * How a caller retries. `attempts`: how many tries in all; `baseMs`/`capMs`: the backoff's
 * first and largest ceiling; `longestWaitMs`: a wait beyond this (a long Retry-After) is not
 * waited for — the caller reports the failure instead; `offlineGivesUp`: a network failure
 * while the device says it is offline ends the tries at once; `tapAfterMs`: a wait this long or
 * longer, while the device says it is online, is worth a "Send now" button (a tap may help);
 * a shorter one is waited out calmly, and nothing is offered to tap.
 */
/** Someone is waiting for the answer: a few quick tries, then the page says what went wrong. */
export const INTERACTIVE = Object.freeze({ attempts: 3, baseMs: 400, capMs: 2000, longestWaitMs: 5000, offlineGivesUp: true });
/**
 * The upload queue: a photo is never given up on while its failures are temporary; offline, it
 * waits (and the `online` event sends it at once).
 */
export const BACKGROUND = Object.freeze({ attempts: Infinity, baseMs: 1000, capMs: 60_000, longestWaitMs: Infinity, offlineGivesUp: false, tapAfterMs: 15_000 });

/**
 * Whether a failure is worth another try. `status` 0 is a network failure (no answer at all);
 * `code` is the problem's code. Every 5xx is the server's trouble, not the request's
 * (507 `insufficient_storage` included: the photo goes once there is room again).
 * A 409 is temporary only while the same key is still in flight.
 */
export function isTemporary({ status, code }) {
  if (status === 0) return true;
  if (status === 409) return code === 'idempotency_key_in_flight';
  return TEMPORARY_STATUSES.has(status) || status >= 500;
}

/** Exponential backoff with half jitter: try n waits between half and all of base·2^(n−1), capped. */
export function backoffMs(policy, attempts) {
  const ceiling = Math.min(policy.capMs, policy.baseMs * 2 ** Math.max(0, Math.min(attempts - 1, 16)));
  return ceiling / 2 + Math.random() * (ceiling / 2);
}

/**
 * The wait before the next try after `attempts` tries ended in `failure`
 * (`{status, code, retryAfterMs}`), or null when there is none to make: the failure is
 * permanent, the tries are used up, or the server asks for a longer wait than the caller
 * accepts. The server's Retry-After is a floor, never shortened.
 */
export function retryDelay(policy, attempts, failure) {
  if (!isTemporary(failure)) return null;
  if (failure.status === 0 && policy.offlineGivesUp && navigator.onLine === false) return null;
  const tries = Math.max(1, attempts);
  if (tries >= policy.attempts) return null;
  const wait = Math.max(failure.retryAfterMs ?? 0, backoffMs(policy, tries));
  return wait > policy.longestWaitMs ? null : wait;
}

/**
 * Whether a tap may help a photo whose next automatic try is `waitMs` away: only while the
 * device says it is online (offline, only the connection helps, and the `online` event sends
 * at once) and only when that try is far off — after several failed tries in a row (the
 * backoff has grown: with BACKGROUND, from about the fifth) or when the server asked for a
 * long wait. A short wait is simply waited out.
 */
export function tapMayHelp(policy, waitMs) {
  return navigator.onLine !== false && waitMs >= (policy.tapAfterMs ?? Infinity);
}

/** Parses a `Retry-After` header (seconds or an HTTP date) into milliseconds, or null. */
export function retryAfterMs(value) {
  if (!value) return null;
  const s = Number(value);
  if (Number.isFinite(s)) return Math.max(0, s * 1000);
  const at = Date.parse(value);
  return Number.isFinite(at) ? Math.max(0, at - Date.now()) : null;
}
