// The page's hasher for picked files: each file's SHA-256 (sha256.js), computed in a module
// Worker (sha256-worker.js) so that hashing a video never stalls the page. Where a module Worker
// cannot be made (an old browser), or it fails, the file is hashed here on the page instead.
// `hashFile(blob)` resolves with 64 hex digits, or null when the file could not be read.

import { hashBlob } from './sha256.js';

let worker = null;
let broken = false;
let next = 0;
const waiting = new Map();

function theWorker() {
  if (worker || broken) return worker;
  try {
    worker = new Worker(new URL('./sha256-worker.js', import.meta.url), { type: 'module' });
  } catch {
    broken = true;
    return null;
  }
  worker.onmessage = (event) => {
    const { id, sha256, error } = event.data || {};
    const done = waiting.get(id);
    waiting.delete(id);
    done?.(error ? null : sha256);
  };
  worker.onerror = (event) => {
    // The worker could not start (or died): what it had is hashed here instead.
    event.preventDefault?.();
    broken = true;
    worker?.terminate();
    worker = null;
    const left = [...waiting.values()];
    waiting.clear();
    for (const retry of left) retry(undefined);
  };
  return worker;
}

async function hashHere(blob) {
  try {
    return await hashBlob(blob);
  } catch {
    return null;
  }
}

/** The SHA-256 of a picked file (hex), or null when it could not be read. */
export function hashFile(blob) {
  const w = theWorker();
  if (!w) return hashHere(blob);
  return new Promise((resolve) => {
    const id = (next += 1);
    waiting.set(id, (sha256) => (sha256 === undefined ? hashHere(blob).then(resolve) : resolve(sha256)));
    w.postMessage({ id, blob });
  });
}
