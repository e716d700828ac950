// Re-picked photos: the page hashes every picked file (SHA-256, in a Worker) and asks the server once
// per pick which of those bytes the guest has stored already (`POST …/uploads/known`). The same
// 5 photos picked a second time, under other names (as a gallery app hands them over again, so the
// page's own name/size/time check does not know them): 5 rows, the quota charged once, the second
// pick sends under 1% of the photos' bytes (counted by a proxy between Chromium and the server), and
// the recognised photos show as already uploaded. On a plain-HTTP LAN address (no `crypto.subtle`)
// the page's own SHA-256 recognises them all the same.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fixtures, onPhone, startServer, startProxy, join, choose, waitForItems, screenshot, watchConsole, backends, fileSize, launchBrowser, makePhotos, phone, eventually } from './helpers.mjs';

const f = fixtures({ server: false, photos: 5, photoOptions: { prefix: 'repick', width: 1600, height: 1200, noise: true } });

/** Copies of `files` under other names and times: the same bytes, picked again. */
function copiesOf(files, tag) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `confetti-${tag}-`));
  return files.map((file, i) => {
    const copy = path.join(dir, `IMG_${tag}_${i + 1}.jpg`);
    fs.copyFileSync(file, copy);
    const later = new Date(Date.now() + 60_000 * (i + 1));
    fs.utimesSync(copy, later, later);
    return copy;
  });
}

/** Watches the page's requests: the hashes each `known` question carried and the photos POSTed. */
function watch(page) {
  const seen = { known: [], posts: 0 };
  page.on('request', (r) => {
    if (r.method() !== 'POST') return;
    if (r.url().endsWith('/uploads/known')) seen.known.push(JSON.parse(r.postData() || '{}').sha256);
    else if (/\/uploads(\/resumable)?$/.test(new URL(r.url()).pathname)) seen.posts += 1;
  });
  return seen;
}

for (const backend of backends()) {
  test(`${backend}: the same 5 photos picked twice are 5 rows, charged once, and the second pick sends under 1% of the bytes`, { timeout: 150_000 }, async () => {
    const proxy = await startProxy();
    const server = await startServer({ backend, name: 'repick', env: { CONFETTI_PUBLIC_URL: proxy.base } });
    try {
      proxy.target(new URL(server.base).port);
      const event = await server.createEvent();
      const total = f.photos.reduce((s, p) => s + fileSize(p), 0);
      await onPhone(f.browser, { locale: 'en-GB' }, async (page) => {
        const problems = watchConsole(page);
        await join(page, event, 'Cousin Max');
        const seen = watch(page);

        await choose(page, f.photos);
        await waitForItems(page, 5, 'done', 90_000);
        assert.equal(seen.known.length, 1, 'one question for the whole first pick');
        assert.equal(seen.known[0].length, 5);
        assert.ok(seen.known[0].every((h) => /^[0-9a-f]{64}$/.test(h)));
        assert.equal(seen.posts, 5);
        const stored = await server.uploads(event);
        assert.deepEqual(new Set(stored.map((u) => u.sha256)), new Set(seen.known[0]), 'the page hashes as the server does');

        await page.waitForTimeout(1000);
        const before = proxy.up;
        const started = Date.now();
        await choose(page, copiesOf(f.photos, 'again'));
        await waitForItems(page, 10, 'done', 30_000);
        const sent = proxy.up - before;
        console.log(`re-pick of 5 photos (${total} bytes): ${sent} bytes sent (${((100 * sent) / total).toFixed(2)} %), ${Date.now() - started} ms`);
        assert.ok(sent < total * 0.01, `the re-pick sent ${sent} bytes, ${total} bytes of photos`);
        assert.equal(seen.known.length, 2, 'one question for the whole second pick');
        assert.equal(seen.posts, 5, 'no photo was sent again');

        const rows = await server.uploads(event);
        assert.equal(rows.length, 5, 'five rows, not ten');
        const me = await page.evaluate(() => fetch('/api/v1/me').then((r) => r.json()));
        assert.equal(me.used_bytes, total, 'the quota is charged once');
        assert.equal(me.upload_count, 5);

        // The re-picked rows say so; opening the list shows them all.
        const recognised = await page.$$eval('[data-client-upload-id][data-recognised="true"]', (els) => els.map((e) => [e.querySelector('.q-state')?.textContent, e.querySelector('.q-msg')?.textContent]));
        assert.equal(recognised.length, 5);
        for (const [state, msg] of recognised) {
          assert.equal(state, 'Already uploaded');
          assert.match(msg, /sent this before/);
        }
        const toggle = page.locator('.q-toggle');
        if (await toggle.isVisible()) await toggle.click();
        await page.locator('[data-recognised="true"]').first().scrollIntoViewIfNeeded();
        await screenshot(page, 'repick-recognised');
        assert.deepEqual(problems, []);
      });
    } finally {
      await proxy.close();
      await server.stop();
    }
  });
}

test('on a plain-HTTP LAN address (no crypto.subtle) a re-picked photo is recognised all the same', { timeout: 90_000 }, async () => {
  const browser = await launchBrowser(['--host-resolver-rules=MAP wedding.lan 127.0.0.1']);
  const server = await startServer({ name: 'repick-lan' });
  try {
    const event = await server.createEvent();
    const lanEvent = { ...event, join_url: event.join_url.replace('127.0.0.1', 'wedding.lan') };
    const photos = await makePhotos(browser, 2, { prefix: 'lan-repick' });
    const context = await phone(browser);
    try {
      const page = await context.newPage();
      await join(page, lanEvent, 'Gast im WLAN');
      assert.deepEqual(await page.evaluate(() => [window.isSecureContext, typeof crypto.subtle]), [false, 'undefined']);
      const seen = watch(page);
      await choose(page, photos);
      await waitForItems(page, 2, 'done');
      await choose(page, copiesOf(photos, 'lan'));
      await waitForItems(page, 4, 'done');
      assert.equal(seen.known.length, 2);
      assert.equal(seen.posts, 2, 'the re-picked photos were not sent');
      assert.equal((await server.uploads(event)).length, 2);
      assert.equal(await page.locator('[data-recognised="true"]').count(), 2);
      // German: the page's words for it.
      assert.match(await page.locator('[data-recognised="true"] .q-msg').first().textContent(), /schon geschickt/);
      const toggle = page.locator('.q-toggle');
      if (await toggle.isVisible()) await toggle.click();
      await page.locator('[data-recognised="true"]').first().scrollIntoViewIfNeeded();
      await screenshot(page, 'repick-recognised-de');
    } finally {
      await context.close();
    }
  } finally {
    await browser.close();
    await server.stop();
  }
});

test('a pick whose question is cut by a reload asks again after it; a server that does not answer the question gets the photos all the same', { timeout: 90_000 }, async () => {
  const server = await startServer({ name: 'repick-reload' });
  try {
    const event = await server.createEvent();
    const photos = f.photos.slice(0, 2);
    await onPhone(f.browser, { locale: 'en-GB' }, async (page) => {
      await join(page, event, 'Aunt Lou');
      // The question gets no answer: the photos wait, checking, and nothing is sent.
      let held = 0;
      await page.route('**/uploads/known', () => {
        held += 1;
      });
      await choose(page, photos);
      await eventually(() => held === 1, { what: 'the question' });
      const waiting = await page.$$eval('[data-client-upload-id]', (els) => els.map((e) => [e.dataset.uploadState, e.querySelector('.q-msg')?.textContent]));
      assert.deepEqual(waiting, [['queued', 'Checking whether you sent it before …'], ['queued', 'Checking whether you sent it before …']]);
      assert.equal((await server.uploads(event)).length, 0);
      // Reloaded: the stored items ask again, and go.
      await page.unrouteAll({ behavior: 'ignoreErrors' });
      await page.reload();
      // Sent after the reload: by the page, or by the service worker while no page of the event
      // was open (then the reloaded page has no row left for them).
      await eventually(async () => (await server.uploads(event)).length === 2, { what: 'the two photos stored' });
      await page.waitForFunction(() => [...document.querySelectorAll('[data-client-upload-id]')].every((e) => e.dataset.uploadState === 'done'));
      // A server that refuses the question (as one without it would: 404): the photos go unchecked.
      await page.route('**/uploads/known', (route) => route.fulfill({ status: 404, contentType: 'application/problem+json', body: '{"code":"not_found"}' }));
      await choose(page, copiesOf(f.photos.slice(2, 3), 'unasked'));
      await eventually(async () => (await server.uploads(event)).length === 3, { what: 'the unchecked photo stored' });
      await page.waitForFunction(() => {
        const rows = [...document.querySelectorAll('[data-client-upload-id]')];
        return rows.length > 0 && rows.every((e) => e.dataset.uploadState === 'done');
      });
      assert.equal((await server.uploads(event)).length, 3);
    });
  } finally {
    await server.stop();
  }
});

test('a photo stored under its own key while the page asked about it is already uploaded, not sent before', { timeout: 90_000 }, async () => {
  const server = await startServer({ name: 'repick-own-key' });
  try {
    const event = await server.createEvent();
    const [photo] = f.photos;
    await onPhone(f.browser, { locale: 'en-GB' }, async (page) => {
      await join(page, event, 'Aunt Lou');
      // The page's question waits while the same photo is stored under the queue item's own key,
      // as when the service worker sends the queue while a page of the event loads.
      let release;
      const released = new Promise((resolve) => {
        release = resolve;
      });
      let asked = 0;
      await page.route('**/uploads/known', async (route) => {
        asked += 1;
        await released;
        await route.continue();
      });
      await choose(page, [photo]);
      await eventually(() => asked === 1, { what: 'the question' });
      const key = await page.locator('[data-client-upload-id]').first().getAttribute('data-client-upload-id');
      const sent = await page.request.post(`${server.base}/api/v1/events/${event.slug}/uploads`, {
        multipart: { client_upload_id: key, file: { name: path.basename(photo), mimeType: 'image/jpeg', buffer: fs.readFileSync(photo) } },
      });
      assert.equal(sent.status(), 201);
      release();
      await waitForItems(page, 1, 'done');
      const row = page.locator(`[data-client-upload-id="${key}"]`);
      assert.equal(await row.getAttribute('data-recognised'), null, 'this photo, not an earlier one');
      assert.equal(await row.locator('.q-state').textContent(), 'Already uploaded', 'as after a lost answer');
      assert.notEqual(await row.locator('.q-msg').textContent().catch(() => ''), 'You sent this before — nothing was sent again.');
      const stored = await server.uploads(event);
      assert.equal(stored.length, 1);
      assert.equal(stored[0].client_upload_id, key);
    });
  } finally {
    await server.stop();
  }
});
