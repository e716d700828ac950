// A benchmark, not a test: the bytes a phone sends when its guest picks the same 20 photos a second
// time (under other names, as a gallery app hands them over again), counted by a TCP proxy between
// Chromium and a fresh server (SQLite), next to the bytes of the first pick. Also the time from the
// second pick to every row showing as sent.
//
//   cd tests/browser && node bench/repick.mjs   (after `cargo build`)

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { launchBrowser, makePhotos, onPhone, startServer, startProxy, join, choose, waitForItems, fileSize } from '../helpers.mjs';

const N = Number(process.env.PHOTOS || 20);
const browser = await launchBrowser();
const proxy = await startProxy();
const server = await startServer({ name: 'bench-repick', env: { CONFETTI_PUBLIC_URL: proxy.base } });
try {
  proxy.target(new URL(server.base).port);
  const photos = await makePhotos(browser, N, { prefix: 'bench-repick', width: 2000, height: 1500, noise: true });
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'confetti-again-'));
  const again = photos.map((p, i) => {
    const copy = path.join(dir, `IMG_again_${i + 1}.jpg`);
    fs.copyFileSync(p, copy);
    return copy;
  });
  const total = photos.reduce((s, p) => s + fileSize(p), 0);
  const event = await server.createEvent();
  await onPhone(browser, { locale: 'en-GB' }, async (page) => {
    await join(page, event, 'Bench');
    let before = proxy.up;
    let t = Date.now();
    await choose(page, photos);
    await waitForItems(page, N, 'done', 300_000);
    const first = { bytes: proxy.up - before, ms: Date.now() - t };
    await page.waitForTimeout(2000);
    before = proxy.up;
    t = Date.now();
    await choose(page, again);
    await waitForItems(page, 2 * N, 'done', 120_000);
    const second = { bytes: proxy.up - before, ms: Date.now() - t };
    const rows = (await server.uploads(event)).length;
    console.log(`${N} photos, ${(total / 1e6).toFixed(1)} MB of files`);
    console.log(`first pick: ${first.bytes} bytes sent in ${first.ms} ms`);
    console.log(`second pick of the same photos: ${second.bytes} bytes sent (${((100 * second.bytes) / total).toFixed(3)} % of the files) in ${second.ms} ms; ${rows} rows`);
  });
} finally {
  await proxy.close();
  await server.stop();
  await browser.close();
}
