// SHA-256 of a file's bytes, as the server computes it for every file it stores (hex, lowercase):
// how the page recognises a photo picked again (queue-scheduler.js). `crypto.subtle.digest` is
// native and fast but takes the whole input at once, and exists only in a secure context (HTTPS,
// localhost), not on a plain-HTTP LAN address; so this module also has a small SHA-256 of its own
// that takes the bytes piece by piece: used for large files (a video is hashed in 4 MiB reads,
// never held whole) and wherever `crypto.subtle` is missing. No DOM: it runs in a Worker
// (sha256-worker.js), in a service worker, or on the page.

const K = new Int32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
  0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
  0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
  0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
  0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
  0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
  0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
]);

/** Files up to this size are hashed by `crypto.subtle` where it exists (read whole); larger ones piece by piece. */
export const ONE_SHOT_MAX = 16 * 1024 * 1024;
/** How much of a large file is read at a time. */
const READ_BYTES = 4 * 1024 * 1024;

/** An incremental SHA-256: `update(bytes)` as often as needed, then `hex()` once. */
export class Sha256 {
  constructor() {
    this.h = new Int32Array([0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19]);
    this.w = new Int32Array(64);
    this.block = new Uint8Array(64);
    this.filled = 0;
    this.length = 0;
  }

  /** Adds bytes (a Uint8Array). */
  update(bytes) {
    let i = 0;
    const n = bytes.length;
    this.length += n;
    if (this.filled > 0) {
      const take = Math.min(64 - this.filled, n);
      this.block.set(bytes.subarray(0, take), this.filled);
      this.filled += take;
      i = take;
      if (this.filled < 64) return this;
      this.compress(this.block, 0);
      this.filled = 0;
    }
    for (; i + 64 <= n; i += 64) this.compress(bytes, i);
    if (i < n) {
      this.block.set(bytes.subarray(i), 0);
      this.filled = n - i;
    }
    return this;
  }

  /** The digest as 64 lowercase hex digits. The object is spent afterwards. */
  hex() {
    const bits = this.length * 8;
    const pad = new Uint8Array(this.filled < 56 ? 64 - this.filled : 128 - this.filled);
    pad[0] = 0x80;
    // The length in bits, big-endian, in the last 8 bytes (2^53 bits is far beyond any file here).
    const hi = Math.floor(bits / 2 ** 32);
    const lo = bits >>> 0;
    const end = pad.length;
    pad[end - 8] = hi >>> 24;
    pad[end - 7] = hi >>> 16;
    pad[end - 6] = hi >>> 8;
    pad[end - 5] = hi;
    pad[end - 4] = lo >>> 24;
    pad[end - 3] = lo >>> 16;
    pad[end - 2] = lo >>> 8;
    pad[end - 1] = lo;
    const length = this.length;
    this.update(pad);
    this.length = length;
    let out = '';
    for (const word of this.h) out += (word >>> 0).toString(16).padStart(8, '0');
    return out;
  }

  compress(p, at) {
    const w = this.w;
    for (let t = 0; t < 16; t += 1) {
      const j = at + t * 4;
      w[t] = (p[j] << 24) | (p[j + 1] << 16) | (p[j + 2] << 8) | p[j + 3];
    }
    for (let t = 16; t < 64; t += 1) {
      const a = w[t - 15];
      const b = w[t - 2];
      const s0 = ((a >>> 7) | (a << 25)) ^ ((a >>> 18) | (a << 14)) ^ (a >>> 3);
      const s1 = ((b >>> 17) | (b << 15)) ^ ((b >>> 19) | (b << 13)) ^ (b >>> 10);
      w[t] = (w[t - 16] + s0 + w[t - 7] + s1) | 0;
    }
    const h = this.h;
    let a = h[0];
    let b = h[1];
    let c = h[2];
    let d = h[3];
    let e = h[4];
    let f = h[5];
    let g = h[6];
    let k = h[7];
    for (let t = 0; t < 64; t += 1) {
      const S1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
      const ch = (e & f) ^ (~e & g);
      const t1 = (k + S1 + ch + K[t] + w[t]) | 0;
      const S0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
      const maj = (a & b) ^ (a & c) ^ (b & c);
      const t2 = (S0 + maj) | 0;
      k = g;
      g = f;
      f = e;
      e = (d + t1) | 0;
      d = c;
      c = b;
      b = a;
      a = (t1 + t2) | 0;
    }
    h[0] = (h[0] + a) | 0;
    h[1] = (h[1] + b) | 0;
    h[2] = (h[2] + c) | 0;
    h[3] = (h[3] + d) | 0;
    h[4] = (h[4] + e) | 0;
    h[5] = (h[5] + f) | 0;
    h[6] = (h[6] + g) | 0;
    h[7] = (h[7] + k) | 0;
  }
}

function hexOf(buffer) {
  return Array.from(new Uint8Array(buffer), (b) => b.toString(16).padStart(2, '0')).join('');
}

/**
 * The SHA-256 of a Blob (a picked File) as 64 lowercase hex digits: by `crypto.subtle` when it
 * exists and the file is small, else read and hashed piece by piece.
 */
export async function hashBlob(blob) {
  const subtle = globalThis.crypto?.subtle;
  if (subtle && blob.size <= ONE_SHOT_MAX) {
    try {
      return hexOf(await subtle.digest('SHA-256', await blob.arrayBuffer()));
    } catch {
      // Refused (an odd context): the hash of its own below.
    }
  }
  const hash = new Sha256();
  for (let at = 0; at < blob.size; at += READ_BYTES) {
    hash.update(new Uint8Array(await blob.slice(at, at + READ_BYTES).arrayBuffer()));
  }
  return hash.hex();
}
