// A guest joins, chooses three photos, and sees all three uploaded and in the gallery; the
// server holds exactly those three and charged the quota once for each.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fixtures, onPhone, makePhotos, startServer, join, choose, waitForItems, screenshot, fileSize, backends, watchConsole } from './helpers.mjs';

const f = fixtures({ server: false, photos: 3, photoOptions: { prefix: 'wedding' } });

for (const backend of backends()) {
  test(`${backend}: join, choose three photos, all are uploaded once and shown in the gallery`, { timeout: 90_000 }, async () => {
    const server = await startServer({ backend, name: 'upload' });
    try {
      const event = await server.createEvent({ name: 'Hochzeit Anna & Ben' });
      await onPhone(f.browser, {}, async (page, context) => {
        const problems = watchConsole(page);
        await join(page, event, 'Tante Erna');
        const before = Number(await page.getAttribute('[data-testid=quota]', 'data-used-bytes'));
        assert.equal(before, 0, 'quota shown before uploading');

        await choose(page, f.photos);
        const keys = await waitForItems(page, 3, 'done');
        assert.equal(new Set(keys).size, 3);

        // The gallery shows the three photos, newest first, with thumbnails once they exist.
        await page.waitForFunction(() => document.querySelectorAll('[data-testid=gallery] .tile img').length === 3, null, { timeout: 20_000 });
        await page.waitForFunction(
          () => [...document.querySelectorAll('[data-testid=gallery] .tile img')].every((img) => img.complete && img.naturalWidth > 0),
          null,
          { timeout: 20_000 },
        );

        const rows = await server.uploads(event);
        assert.equal(rows.length, 3, 'three rows on the server');
        assert.deepEqual(new Set(rows.map((r) => r.client_upload_id)), new Set(keys), 'stored under the keys the page made');
        const total = f.photos.reduce((s, f) => s + fileSize(f), 0);
        assert.equal(rows.reduce((s, r) => s + r.bytes, 0), total, 'the bytes of the files, each once');

        await page.waitForFunction((total) => Number(document.querySelector('[data-testid=quota]').dataset.usedBytes) === total, total, { timeout: 10_000 });
        assert.match(await page.textContent('[data-testid=quota]'), /von/, 'quota in German');

        // The thumbnails replace the originals as soon as the server has made them.
        await page.waitForFunction(
          () => [...document.querySelectorAll('[data-testid=gallery] .tile img')].every((img) => /\/thumb$/.test(img.getAttribute('src')) && img.complete && img.naturalWidth > 0),
          null,
          { timeout: 20_000 },
        );

        if (backend === 'sqlite') {
          await page.evaluate(() => window.scrollTo(0, 0));
          await screenshot(page, 'upload-page-390x844');
          await page.evaluate(() => document.querySelector('.gallery-section').scrollIntoView());
          await screenshot(page, 'gallery-390x844');
          await page.locator('[data-testid=gallery] .tile-open').first().click();
          await page.locator('dialog.lightbox[open] .lightbox-img').waitFor();
          await page.waitForFunction(() => document.querySelector('dialog.lightbox .lightbox-img')?.naturalWidth > 0);
          await screenshot(page, 'lightbox-390x844');
        }
        assert.deepEqual(problems, [], 'no script errors or CSP violations');
      });
    } finally {
      await server.stop();
    }
  });
}

test('a slow upload shows its progress bar moving', { timeout: 60_000 }, async () => {
  const server = await startServer({ name: 'progress' });
  try {
    const event = await server.createEvent();
    const [big] = await makePhotos(f.browser, 1, { prefix: 'slow', width: 2400, height: 1800, noise: true });
    await onPhone(f.browser, { locale: 'en-US' }, async (page, context) => {
      await join(page, event, 'Slow Wi-Fi');
      const cdp = await context.newCDPSession(page);
      await cdp.send('Network.enable');
      // About 1 s for the photo: progress events arrive while it is on its way.
      await cdp.send('Network.emulateNetworkConditions', { offline: false, latency: 50, downloadThroughput: -1, uploadThroughput: Math.ceil(fileSize(big) / 1.5) });
      await page.evaluate(() => {
        window.__progress = [];
        new MutationObserver(() => {
          const bar = document.querySelector('[data-upload-state=uploading] progress');
          if (bar && bar.hasAttribute('value')) window.__progress.push(bar.value);
        }).observe(document.body, { subtree: true, attributes: true, attributeFilter: ['value'] });
      });
      await choose(page, [big]);
      await waitForItems(page, 1, 'done');
      const seen = await page.evaluate(() => window.__progress);
      assert.ok(seen.some((v) => v > 0 && v < 1), `progress between 0 and 1 was shown: ${seen.join(', ')}`);
    });
  } finally {
    await server.stop();
  }
});
