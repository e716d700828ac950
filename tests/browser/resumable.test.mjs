// A 200 MB video through the guest's page, resumably: the page reaches the server through a
// TCP proxy (as a phone reaches it through venue Wi-Fi) that counts every byte it forwards to
// the server. (a) The connection is cut at half the file: the page asks the server how much it
// kept and sends only the rest. (b) The guest reloads the page at half: the queue, restored
// from IndexedDB with its upload's address, does the same. Either way the server receives less
// than 110% of the file, stores exactly one upload with the file's bytes, and the video plays.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { fixtures, onPhone, startServer, startProxy, join, choose, waitForItems, screenshot, watchConsole, eventually, backends, OUTPUT } from './helpers.mjs';

const f = fixtures({ server: false });
const SIZE = 200 * 1024 * 1024;
const big = {};
const small = {};

/**
 * A playable 200 MB MP4: a 3 s fast-start clip (movie header first) followed by a top-level
 * `free` box of random bytes up to 200 MB (players skip it; random, so that bytes resumed at
 * the wrong offset would change the file's SHA-256).
 */
before(() => {
  const clip = path.join(OUTPUT, 'resumable-clip.mp4');
  execFileSync('ffmpeg', [
    '-hide_banner', '-loglevel', 'error', '-y',
    '-f', 'lavfi', '-i', 'testsrc2=size=320x240:rate=30', '-f', 'lavfi', '-i', 'sine=frequency=440',
    '-t', '3', '-c:v', 'libx264', '-pix_fmt', 'yuv420p', '-c:a', 'aac', '-movflags', '+faststart', clip,
  ]);
  const head = fs.readFileSync(clip);
  big.dir = fs.mkdtempSync(path.join(os.tmpdir(), 'confetti-resumable-'));
  big.file = path.join(big.dir, 'Eröffnungstanz.mp4');
  const hash = crypto.createHash('sha256');
  const fd = fs.openSync(big.file, 'w');
  const write = (buf) => {
    fs.writeSync(fd, buf);
    hash.update(buf);
  };
  write(head);
  const box = Buffer.alloc(8);
  box.writeUInt32BE(SIZE - head.length, 0);
  box.write('free', 4, 'latin1');
  write(box);
  for (let left = SIZE - head.length - 8; left > 0;) {
    const n = Math.min(left, 16 * 1024 * 1024);
    write(crypto.randomBytes(n));
    left -= n;
  }
  fs.closeSync(fd);
  big.sha256 = hash.digest('hex');
  assert.equal(fs.statSync(big.file).size, SIZE);

  // About 9 MB of H.264 (noise does not compress): a short phone video.
  small.file = path.join(big.dir, 'Torte.mp4');
  execFileSync('ffmpeg', [
    '-hide_banner', '-loglevel', 'error', '-y',
    '-f', 'lavfi', '-i', 'color=c=gray:s=640x480:r=25,noise=alls=60:allf=t',
    '-t', '2', '-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p', '-movflags', '+faststart', small.file,
  ]);
  const bytes = fs.readFileSync(small.file);
  small.size = bytes.length;
  small.sha256 = crypto.createHash('sha256').update(bytes).digest('hex');
});

after(() => {
  if (big.dir) fs.rmSync(big.dir, { recursive: true, force: true });
});

/**
 * Runs `fn({page, context, proxy, server, event, requests})` for a guest who joined an event on a phone,
 * through a counting proxy that is the fresh server's public address.
 */
async function asGuestBehindProxy({ backend, name, locale, guest, serviceWorkers }, fn) {
  const proxy = await startProxy();
  const server = await startServer({ backend, name, env: { CONFETTI_PUBLIC_URL: proxy.base } });
  try {
    proxy.target(new URL(server.base).port);
    const event = await server.createEvent();
    await onPhone(f.browser, { locale, serviceWorkers }, async (page, context) => {
      await join(page, event, guest);
      await fn({ page, context, proxy, server, event, requests: watchResumable(page) });
    });
  } finally {
    await proxy.close();
    await server.stop();
  }
}

/** Every request of the page to the resumable endpoints: method, Upload-Offset, and the answer's status (0: none). */
function watchResumable(page) {
  const seen = [];
  page.on('request', (r) => {
    if (!r.url().includes('/uploads/resumable')) return;
    const entry = { method: r.method(), offset: r.headers()['upload-offset'] ?? null, status: null };
    seen.push(entry);
    r.response().then((res) => {
      entry.status = res ? res.status() : 0;
    }, () => {
      entry.status = 0;
    });
  });
  return seen;
}

/** The progress bar of the page's one queue item. */
function itemProgress(page) {
  return page.evaluate(() => {
    const li = document.querySelector('[data-client-upload-id]');
    return { state: li?.dataset.uploadState, value: li?.querySelector('progress.q-progress')?.value ?? null };
  });
}

/** What the server holds afterwards: one upload with the file's bytes; it plays in the lightbox. */
async function checkStoredAndPlays(server, event, page, key) {
  const rows = await server.uploads(event);
  assert.equal(rows.length, 1, `one upload row, got ${rows.length}`);
  assert.equal(rows[0].client_upload_id, key);
  assert.equal(rows[0].kind, 'video');
  assert.equal(rows[0].filename, path.basename(big.file), 'the name, UTF-8 in Upload-Metadata, arrived intact');
  assert.equal(rows[0].bytes, SIZE);
  assert.equal(rows[0].sha256, big.sha256, 'the stored bytes are the file’s');
  const byKey = await page.evaluate(({ slug, k }) => fetch(`/api/v1/events/${slug}/uploads/by-client-id/${k}`).then((r) => r.status), { slug: event.slug, k: key });
  assert.equal(byKey, 200);
  const me = await page.evaluate(() => fetch('/api/v1/me').then((r) => r.json()));
  assert.equal(me.used_bytes, SIZE, 'the quota charged once');
  assert.equal(me.upload_count, 1);

  await eventually(async () => (await server.call('GET', `/api/v1/uploads/${rows[0].id}`, { token: event.organiserToken })).body.status === 'ready', { timeout: 60_000, what: 'the video ready' });
  const tile = page.locator(`[data-testid=gallery] .tile[data-upload-id="${rows[0].id}"]`);
  await tile.waitFor({ timeout: 30_000 });
  await tile.locator('.tile-open').click();
  const player = page.locator('dialog.lightbox[open] [data-testid=lightbox-video]');
  await player.waitFor();
  await player.evaluate((v) => {
    v.muted = true;
    return v.play();
  });
  await page.waitForFunction(() => {
    const v = document.querySelector('dialog.lightbox[open] video');
    return v && v.readyState >= 2 && v.currentTime > 1;
  }, null, { timeout: 30_000 });
}

const mb = (n) => `${(n / 1024 / 1024).toFixed(1)} MiB`;
const pct = (n) => `${((100 * n) / SIZE).toFixed(1)}%`;

for (const backend of backends()) {
  test(`${backend}: a 200 MB video cut off at half by the network resumes where it stopped`, { timeout: 300_000 }, async () => {
    await asGuestBehindProxy({ backend, name: 'resumable-cut', locale: 'en-GB', guest: 'Onkel Bernd' }, async ({ page, proxy, server, event, requests }) => {
      const problems = watchConsole(page);
      const cut = proxy.cutAt(SIZE / 2);
      const before = proxy.up;
      const started = Date.now();
      await choose(page, [big.file]);
      const { bytes: atCut } = await cut;
      const cutAt = Date.now();

      // Mid-resume: the resumed request is held at three quarters of the file for a picture.
      const held = await proxy.holdAt(SIZE / 4);
      await page.waitForFunction(() => {
        const li = document.querySelector('[data-client-upload-id]');
        return li?.dataset.uploadState === 'uploading' && li.querySelector('progress.q-progress')?.value > 0.6;
      }, null, { timeout: 30_000 });
      const mid = await itemProgress(page);
      await screenshot(page, 'resumable-mid-resume-390x844');
      held.release();

      const [key] = await waitForItems(page, 1, 'done', 180_000);
      const took = Date.now() - started;
      const sent = proxy.up - before;
      console.log(`${backend} cut: ${mb(sent)} reached the server for a ${mb(SIZE)} file (${pct(sent)}); cut after ${mb(atCut)} at ${cutAt - started} ms; done in ${took} ms; progress shown mid-resume ${mid.value?.toFixed(3)}`);
      assert.ok(mid.value > 0.6 && mid.value <= 1, `the resumed progress counts the kept bytes: ${mid.value}`);
      assert.ok(sent < SIZE * 1.1, `the server received ${pct(sent)} of the file`);
      assert.ok(sent >= SIZE, 'every byte of the file reached the server');
      console.log(`${backend} cut: the page's requests ${JSON.stringify(requests)}`);
      // The page learns the offset from a HEAD, or from the 409 that answers Chromium's own
      // re-sending of the cut request (it re-sends a request cut on a reused connection).
      const patches = requests.filter((r) => r.method === 'PATCH');
      assert.ok(patches.some((r) => Number(r.offset) > SIZE / 4), `a PATCH resumed past the start: ${JSON.stringify(requests)}`);
      assert.equal(requests.filter((r) => r.method === 'POST').length, 1, 'the upload was created once');
      await checkStoredAndPlays(server, event, page, key);
      assert.deepEqual(problems, []);
    });
  });

  test(`${backend}: a page reload at half a 200 MB video resumes from the server's offset`, { timeout: 300_000 }, async () => {
    await asGuestBehindProxy({ backend, name: 'resumable-reload', locale: 'de-DE', guest: 'Oma Ilse' }, async ({ page, proxy, server, event, requests }) => {
      const hold = proxy.holdAt(SIZE / 2);
      const before = proxy.up;
      const started = Date.now();
      await choose(page, [big.file]);
      const held = await hold;
      const atHold = held.bytes;
      await screenshot(page, 'resumable-before-reload-390x844');

      const reloadedAt = Date.now();
      await page.reload();
      // The reload ended the request under way: once the bytes Chromium had already handed to
      // the network have gone, it closes that connection.
      held.release();
      await held.closed;
      await page.locator('[data-client-upload-id]').waitFor({ timeout: 30_000 });
      const [key] = await waitForItems(page, 1, 'done', 180_000);
      const took = Date.now() - started;
      const sent = proxy.up - before;
      console.log(`${backend} reload: the page's requests ${JSON.stringify(requests)}`);
      console.log(`${backend} reload: ${mb(sent)} reached the server for a ${mb(SIZE)} file (${pct(sent)}); reloaded after ${mb(atHold)} at ${reloadedAt - started} ms; done in ${took} ms`);
      assert.ok(sent < SIZE * 1.1, `the server received ${pct(sent)} of the file`);
      assert.ok(sent >= SIZE, 'every byte of the file reached the server');
      const i = requests.findIndex((r) => r.method === 'HEAD');
      assert.ok(i > 0, `after the reload the page asked for the offset: ${JSON.stringify(requests)}`);
      assert.ok(requests.slice(i).some((r) => r.method === 'PATCH' && Number(r.offset) > SIZE / 4), `the PATCH after the reload resumed past the start: ${JSON.stringify(requests)}`);
      assert.equal(requests.filter((r) => r.method === 'POST').length, 1, 'the upload was created once');
      await checkStoredAndPlays(server, event, page, key);
    });
  });

  test(`${backend}: a video whose upload was cancelled on the server while the tab was closed is sent again under its key`, { timeout: 120_000 }, async () => {
    // The page alone (no service worker, which would send it with the tab closed): it finds the address gone.
    await asGuestBehindProxy({ backend, name: 'resumable-gone', locale: 'en-GB', guest: 'Tante Erna', serviceWorkers: 'block' }, async ({ page, context, proxy, server, event }) => {
      const hold = proxy.holdAt(small.size / 2);
      await choose(page, [small.file]);
      const held = await hold;
      const item = await page.evaluate(() => new Promise((resolve, reject) => {
        const open = indexedDB.open('confetti');
        open.onerror = () => reject(open.error);
        open.onsuccess = () => {
          const req = open.result.transaction('queue').objectStore('queue').getAll();
          req.onsuccess = () => resolve(req.result.map((i) => ({ key: i.client_upload_id, location: i.location }))[0]);
          req.onerror = () => reject(req.error);
        };
      }));
      assert.match(item.location || '', new RegExp(`^/api/v1/events/${event.slug}/uploads/resumable/`), 'the queue keeps the upload’s address');

      // The guest closes the tab as the connection drops (cut here: released, the bytes Chromium
      // has buffered would complete so small a file); meanwhile the upload resource goes, as
      // when it expires.
      await page.close();
      held.cut();
      await held.closed;
      const cookie = (await context.cookies()).map((c) => `${c.name}=${c.value}`).join('; ');
      const gone = await fetch(`${server.base}${item.location}`, { method: 'DELETE', headers: { Cookie: cookie } });
      assert.equal(gone.status, 204);
      assert.equal((await fetch(`${server.base}${item.location}`, { method: 'HEAD', headers: { Cookie: cookie } })).status, 404);

      // Opened again, the page finds the address gone, creates the upload anew under the same key.
      const again = await context.newPage();
      const requests = watchResumable(again);
      await again.goto(`${proxy.base}/e/${event.slug}`);
      const [key] = await waitForItems(again, 1, 'done', 60_000);
      assert.equal(key, item.key);
      assert.deepEqual(requests.map((r) => `${r.method} ${r.status}`).slice(0, 3), ['HEAD 404', 'POST 201', 'PATCH 201'], JSON.stringify(requests));
      assert.equal(requests.find((r) => r.method === 'PATCH').offset, '0');
      const rows = await server.uploads(event);
      assert.equal(rows.length, 1);
      assert.equal(rows[0].client_upload_id, item.key);
      assert.equal(rows[0].sha256, small.sha256);
      const me = await again.evaluate(() => fetch('/api/v1/me').then((r) => r.json()));
      assert.equal(me.used_bytes, small.size, 'the quota charged once');
    });
  });
}
