// A module Worker that hashes picked files off the page's main thread (content-hash.js sends
// them): one message `{id, blob}` in, `{id, sha256}` (or `{id, error}`) out, one file at a time.

import { hashBlob } from './sha256.js';

let chain = Promise.resolve();

self.onmessage = (event) => {
  const { id, blob } = event.data || {};
  chain = chain.then(async () => {
    try {
      self.postMessage({ id, sha256: await hashBlob(blob) });
    } catch (e) {
      self.postMessage({ id, error: String(e?.message || e) });
    }
  });
};
