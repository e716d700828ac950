// A photo the server is still processing: its tile never loads the original. The uploader's
// own page draws it from the copy in its upload queue; another guest sees a calm placeholder
// (still when the phone asks for less motion); both swap to the thumbnail once it is made.
// The server runs without derivative workers; a second instance on the same data directory
// with one worker makes the thumbnails later.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fixtures, onPhone, startServer, join, choose, waitForItems, screenshot, watchConsole } from './helpers.mjs';

const f = fixtures({ server: false, photos: 1, photoOptions: { prefix: 'processing', width: 1600, height: 1200 } });

/** Every request the page makes for an original. */
function watchOriginals(page) {
  const seen = [];
  page.on('request', (r) => {
    if (/\/api\/v1\/uploads\/[^/]+\/original/.test(new URL(r.url()).pathname)) seen.push(r.url());
  });
  return seen;
}

const tileOf = (page) => page.locator('[data-testid=gallery] .tile').first();

test('a processing photo shows the local copy to its uploader and a placeholder to others, never the original, then its thumbnail', { timeout: 120_000 }, async () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'confetti-processing-'));
  const server = await startServer({ name: 'processing', env: { CONFETTI_DATA_DIR: dataDir, CONFETTI_DERIVATIVE_WORKERS: '0' } });
  let worker = null;
  try {
    const event = await server.createEvent({ name: 'Sommerfest' });
    await onPhone(f.browser, { locale: 'en-US' }, async (uploader) => {
      const uploaderProblems = watchConsole(uploader);
      const uploaderOriginals = watchOriginals(uploader);
      await join(uploader, event, 'Uploader');
      await choose(uploader, f.photos);
      await waitForItems(uploader, 1, 'done');
      const mine = tileOf(uploader);
      await mine.waitFor();
      assert.equal(await mine.getAttribute('data-status'), 'processing');
      assert.equal(await mine.getAttribute('data-picture'), 'local', 'the own photo, from the queue');
      await uploader.waitForFunction(() => {
        const img = document.querySelector('[data-testid=gallery] .tile img');
        return img && img.src.startsWith('blob:') && img.complete && img.naturalWidth > 0;
      });
      await mine.locator('.tile-open').click();
      await uploader.waitForFunction(() => document.querySelector('dialog.lightbox[open] .lightbox-picture')?.dataset.picture === 'local');
      await uploader.click('dialog.lightbox[open] button[data-action=close]');

      await onPhone(f.browser, { locale: 'de-DE' }, async (other) => {
        const otherProblems = watchConsole(other);
        const otherOriginals = watchOriginals(other);
        await join(other, event, 'Gast');
        const tile = tileOf(other);
        await tile.waitFor();
        assert.equal(await tile.getAttribute('data-status'), 'processing');
        assert.equal(await tile.getAttribute('data-picture'), 'placeholder');
        assert.equal(await tile.locator('img').count(), 0, 'no image in the tile');
        assert.equal(await tile.locator('.badge').textContent(), 'in Arbeit');
        const placeholder = tile.locator('[data-testid=tile-placeholder]');
        assert.equal(await placeholder.evaluate((el) => getComputedStyle(el).animationName), 'placeholder-shimmer', 'it breathes');
        await other.emulateMedia({ reducedMotion: 'reduce' });
        assert.equal(await placeholder.evaluate((el) => getComputedStyle(el).animationName), 'none', 'still for less motion');
        await other.emulateMedia({ reducedMotion: 'no-preference' });
        await other.evaluate(() => document.querySelector('.gallery-section').scrollIntoView());
        await screenshot(other, 'gallery-processing-390x844');

        // The lightbox, too, waits for the preview instead of loading the original.
        await tile.locator('.tile-open').click();
        const picture = other.locator('dialog.lightbox[open] .lightbox-picture');
        await picture.waitFor();
        assert.equal(await picture.getAttribute('data-picture'), 'placeholder');
        assert.equal(await picture.textContent(), 'Das Foto wird noch vorbereitet …');
        await screenshot(other, 'lightbox-processing-390x844');

        // A second instance with a worker makes the derivatives: the live stream brings them.
        worker = await startServer({ name: 'processing-worker', env: { CONFETTI_DATA_DIR: dataDir, CONFETTI_DERIVATIVE_WORKERS: '1', CONFETTI_PUBLIC_URL: server.base } });
        await other.waitForFunction(() => document.querySelector('dialog.lightbox[open] .lightbox-picture')?.dataset.picture === 'preview', null, { timeout: 30_000 });
        await other.click('dialog.lightbox[open] button[data-action=close]');
        for (const page of [other, uploader]) {
          await page.waitForFunction(() => {
            const tile = document.querySelector('[data-testid=gallery] .tile');
            const img = tile?.querySelector('img');
            return tile?.dataset.picture === 'thumb' && tile.dataset.status === 'ready' && /\/thumb$/.test(img.getAttribute('src')) && img.complete && img.naturalWidth > 0;
          }, null, { timeout: 30_000 });
        }
        await other.evaluate(() => document.querySelector('.gallery-section').scrollIntoView());
        await screenshot(other, 'gallery-processed-390x844');
        assert.deepEqual(otherOriginals, [], 'another guest’s page never asked for the original');
        assert.deepEqual(otherProblems, []);
      });
      assert.deepEqual(uploaderOriginals, [], 'the uploader’s page never asked for the original');
      assert.deepEqual(uploaderProblems, []);
    });
  } finally {
    await worker?.stop();
    await server.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
});
