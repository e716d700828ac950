// A benchmark, not a test: how long the page takes to hash a picked file (static/content-hash.js:
// SHA-256 in a module Worker) in headless Chromium, for a 12-megapixel camera JPEG and a 200 MB
// file (a video's size), in a secure context (`crypto.subtle` for files up to 16 MiB, the page's own
// incremental SHA-256 above) and on a plain-HTTP LAN address (no `crypto.subtle`: the page's own
// SHA-256 for every file). The page's files are served from static/ by Playwright's routing: no
// server needed. Prints the median of RUNS hashes of each, and checks each hash against Node's.
//
//   cd tests/browser && node bench/hash-timing.mjs

import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { launchBrowser, REPO } from '../helpers.mjs';

const RUNS = Number(process.env.RUNS || 3);
const STATIC = process.env.STATIC_DIR || path.join(REPO, 'static');
const ORIGINS = [
  ['secure context (HTTPS or localhost)', 'http://localhost:9'],
  ['plain-HTTP LAN address (no crypto.subtle)', 'http://wedding.lan'],
];

const browser = await launchBrowser();
try {
  for (const [what, origin] of ORIGINS) {
    const context = await browser.newContext();
    await context.route(`${origin}/**`, (route) => {
      const name = new URL(route.request().url()).pathname.replace(/^\/static\//, '');
      if (name === '/' || name === '') return route.fulfill({ contentType: 'text/html', body: '<!doctype html><title>hash</title>' });
      const file = path.join(STATIC, path.basename(name));
      if (!fs.existsSync(file)) return route.fulfill({ status: 404, body: '' });
      return route.fulfill({ contentType: 'text/javascript', body: fs.readFileSync(file) });
    });
    const page = await context.newPage();
    await page.goto(`${origin}/`);
    const secure = await page.evaluate(() => [window.isSecureContext, typeof crypto.subtle]);
    const result = await page.evaluate(async (runs) => {
      const { hashFile } = await import('/static/content-hash.js');
      // A 12 MP photo as a phone camera writes it: 4000×3000 with grain, JPEG at 0.92.
      const canvas = new OffscreenCanvas(4000, 3000);
      const ctx = canvas.getContext('2d');
      const img = ctx.createImageData(4000, 3000);
      for (let p = 0; p < img.data.length; p += 4) {
        const v = (Math.random() * 255) | 0;
        img.data[p] = v;
        img.data[p + 1] = (v + p) & 255;
        img.data[p + 2] = 128;
        img.data[p + 3] = 255;
      }
      ctx.putImageData(img, 0, 0);
      const jpeg = await canvas.convertToBlob({ type: 'image/jpeg', quality: 0.92 });
      const chunks = [];
      for (let i = 0; i < 200; i += 1) {
        const c = new Uint8Array(1024 * 1024);
        for (let j = 0; j < c.length; j += 65536) crypto.getRandomValues(c.subarray(j, j + 65536));
        chunks.push(c);
      }
      const big = new Blob(chunks);
      const time = async (blob) => {
        const ms = [];
        let hash = null;
        for (let i = 0; i < runs; i += 1) {
          const t = performance.now();
          hash = await hashFile(blob);
          ms.push(performance.now() - t);
        }
        ms.sort((a, b) => a - b);
        return { ms: Math.round(ms[Math.floor(ms.length / 2)]), hash };
      };
      const jpegBytes = Array.from(new Uint8Array(await jpeg.arrayBuffer()));
      return { jpeg: { size: jpeg.size, ...(await time(jpeg)), bytes: jpegBytes }, big: { size: big.size, ...(await time(big)), sample: Array.from(chunks[0].subarray(0, 16)) } };
    }, RUNS);
    const jpegHash = crypto.createHash('sha256').update(Buffer.from(result.jpeg.bytes)).digest('hex');
    if (jpegHash !== result.jpeg.hash) throw new Error(`JPEG hash differs: ${result.jpeg.hash} vs ${jpegHash}`);
    console.log(`${what} [isSecureContext ${secure[0]}, crypto.subtle ${secure[1]}]`);
    console.log(`  12 MP JPEG, ${(result.jpeg.size / 1e6).toFixed(1)} MB: ${result.jpeg.ms} ms`);
    console.log(`  ${(result.big.size / 1024 / 1024).toFixed(0)} MiB file: ${result.big.ms} ms (${((result.big.size / 1024 / 1024) / (result.big.ms / 1000)).toFixed(0)} MiB/s)`);
    await context.close();
  }
} finally {
  await browser.close();
}
