// The page's upload queue. Split by job into modules a service worker shares with the page:
//   queue-store.js      the storage (IndexedDB: the `queue` and `sent` stores),
//   queue-scheduler.js  the scheduler (slots, the retry policy, online/offline): `UploadQueue`,
//   queue-sender.js     the upload protocol client (one-request and resumable uploads).
// This module adds what only the page has: the server's capabilities it remembered from
// `/api/v1/info` (in localStorage), used when the caller does not say whether uploads may resume.

import { remembered } from './util.js';
import { UploadQueue as Scheduler } from './queue-scheduler.js';

export { PARALLEL, fingerprint } from './queue-scheduler.js';
export { isVideoType, RESUMABLE_THRESHOLD } from './queue-sender.js';

/** Whether the server's capabilities, as the page last read them from `/api/v1/info`, list `name`. */
function rememberedCapability(name) {
  try {
    const info = JSON.parse(remembered('confetti.info'));
    return Array.isArray(info?.capabilities) && info.capabilities.includes(name);
  } catch {
    return false;
  }
}

/** The scheduler, with `limits.resumable` defaulting to what the page remembered of the server. */
export class UploadQueue extends Scheduler {
  /** @param {ConstructorParameters<typeof Scheduler>[0]} options */
  constructor(options) {
    const limits = options.limits || {};
    super({ ...options, limits: { ...limits, resumable: limits.resumable ?? rememberedCapability('resumable_uploads') } });
  }
}
