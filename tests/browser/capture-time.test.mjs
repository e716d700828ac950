// Capture time in real pages, on every backend: the gallery lists photos by the time they were
// taken (a photo taken earlier but sent later goes below the one taken after it), the lightbox
// says when each was taken in the viewer's language and time zone, the "Order" control switches
// to upload order and the device remembers it, a photo the live stream brings goes to its
// place by capture time, and the organiser's slideshow shows them in the order they were taken.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fixtures, phone, startServer, screenshot, backends, watchConsole, guestOf, uploadPhoto, join, OUTPUT, PASSWORD } from './helpers.mjs';

const f = fixtures({ server: false, photos: 4, photoOptions: { prefix: 'taken', width: 640, height: 480 } });

/**
 * The JPEG `file` with an EXIF block saying it was taken at `taken` ("YYYY:MM:DD HH:MM:SS") at
 * `offset` ("+02:00"), written next to the test's other output; its path.
 */
function withCaptureTime(file, taken, offset) {
  const fields = [[0x9003, taken], [0x9011, offset]];
  const exifIfd = 8 + 2 + 12 + 4;
  let value = exifIfd + 2 + 12 * fields.length + 4;
  const parts = [];
  const u16 = (n) => { const b = Buffer.alloc(2); b.writeUInt16BE(n); return b; };
  const u32 = (n) => { const b = Buffer.alloc(4); b.writeUInt32BE(n); return b; };
  parts.push(Buffer.from('MM\0\x2a\0\0\0\x08', 'latin1'), u16(1), u16(0x8769), u16(4), u32(1), u32(exifIfd), u32(0));
  parts.push(u16(fields.length));
  const texts = [];
  for (const [tag, text] of fields) {
    const bytes = Buffer.from(`${text}\0`, 'latin1');
    parts.push(u16(tag), u16(2), u32(bytes.length), u32(value));
    texts.push(bytes);
    value += bytes.length;
  }
  parts.push(u32(0), ...texts);
  const segment = Buffer.concat([Buffer.from('Exif\0\0', 'latin1'), ...parts]);
  const jpeg = fs.readFileSync(file);
  const out = Buffer.concat([jpeg.subarray(0, 2), Buffer.from([0xff, 0xe1]), u16(segment.length + 2), segment, jpeg.subarray(2)]);
  const target = path.join(OUTPUT, `taken-${taken.replace(/[: ]/g, '')}.jpg`);
  fs.writeFileSync(target, out);
  return target;
}

/** Waits until every tile shows its thumbnail (for a screenshot worth looking at). */
const thumbsShown = (page) => page.waitForFunction(() => [...document.querySelectorAll('[data-testid=gallery] .tile')].every((t) => t.dataset.picture === 'thumb'), null, { timeout: 30_000 });

const tileIds = (page) => page.$$eval('[data-testid=gallery] .tile', (els) => els.map((e) => e.dataset.uploadId));

for (const backend of backends()) {
  test(`${backend}: the gallery lists by capture time, the lightbox says when, upload order a choice away`, { timeout: 120_000 }, async () => {
    const server = await startServer({ backend, name: 'capture-time' });
    const contexts = [];
    try {
      const event = await server.createEvent({ name: 'Gartenfest' });
      const anna = await guestOf(server, event, 'Anna');
      // Sent in this order: the late photo of the evening first, then one taken earlier, then
      // one whose file says nothing (dated by its upload, so the latest of all).
      const late = await uploadPhoto(server, event, anna, withCaptureTime(f.photos[0], '2025:08:30 21:00:00', '+02:00'));
      const early = await uploadPhoto(server, event, anna, withCaptureTime(f.photos[1], '2025:08:30 18:15:00', '+02:00'));
      const undated = await uploadPhoto(server, event, anna, f.photos[2]);

      const context = await phone(f.browser, { locale: 'en-GB', timezoneId: 'Europe/Berlin' });
      contexts.push(context);
      const page = await context.newPage();
      const problems = watchConsole(page);
      await join(page, event, 'Ben');
      await page.waitForFunction(() => document.querySelectorAll('[data-testid=gallery] .tile').length === 3);
      assert.equal(await page.getAttribute('[data-testid=gallery]', 'data-order'), 'taken');
      assert.equal(await page.inputValue('select[data-testid=gallery-order]'), 'taken');
      assert.deepEqual(await tileIds(page), [undated, late, early], 'latest taken first: the earlier photo below the later one though it came after');
      await thumbsShown(page);
      await screenshot(page, `capture-time-gallery-phone-${backend}`);

      // The lightbox says when it was taken, in the viewer's time zone (21:00 at +02:00 is 21:00 in Berlin in summer).
      await page.locator(`[data-upload-id="${early}"] .tile-open`).click();
      const when = page.locator('dialog.lightbox[open] [data-testid=taken-at]');
      await when.waitFor();
      assert.equal(await when.getAttribute('datetime'), '2025-08-30T16:15:00.000Z');
      assert.equal(await when.getAttribute('data-source'), 'exif');
      assert.match(await when.textContent(), /^taken Sat,? 30 Aug 2025,? 18:15$/);
      await page.waitForFunction(() => document.querySelector('dialog.lightbox[open] img.lightbox-img')?.complete);
      await screenshot(page, `capture-time-lightbox-phone-${backend}`);
      // Next goes on in the gallery's order: from the earliest there is none; back is the later one.
      await page.locator('dialog.lightbox[open] button[data-action=previous]').click();
      await page.waitForFunction((id) => document.querySelector('dialog.lightbox[open]')?.dataset.uploadId === id, late);
      await page.locator('dialog.lightbox[open] button[data-action=previous]').click();
      await page.waitForFunction((id) => document.querySelector('dialog.lightbox[open]')?.dataset.uploadId === id, undated);
      assert.match(await when.textContent(), /^uploaded /, 'a photo whose file says nothing: its upload time');
      assert.equal(await when.getAttribute('data-source'), 'upload');
      await page.locator('dialog.lightbox[open] button[data-action=close]').click();

      // Upload order: newest upload first; remembered over a reload.
      await page.selectOption('select[data-testid=gallery-order]', 'uploaded');
      await page.waitForFunction((want) => JSON.stringify([...document.querySelectorAll('[data-testid=gallery] .tile')].map((e) => e.dataset.uploadId)) === want, JSON.stringify([undated, early, late]));
      assert.equal(await page.evaluate(() => localStorage.getItem('confetti.galleryOrder')), 'uploaded');
      await page.reload();
      await page.waitForFunction(() => document.querySelectorAll('[data-testid=gallery] .tile').length === 3);
      assert.equal(await page.inputValue('select[data-testid=gallery-order]'), 'uploaded');
      assert.deepEqual(await tileIds(page), [undated, early, late]);

      // Back to capture order; a photo taken between the two arrives live and goes between them.
      await page.selectOption('select[data-testid=gallery-order]', 'taken');
      await page.waitForFunction((want) => JSON.stringify([...document.querySelectorAll('[data-testid=gallery] .tile')].map((e) => e.dataset.uploadId)) === want, JSON.stringify([undated, late, early]));
      const middle = await uploadPhoto(server, event, anna, withCaptureTime(f.photos[3], '2025:08:30 19:40:00', '+02:00'));
      await page.waitForFunction(() => document.querySelectorAll('[data-testid=gallery] .tile').length === 4, null, { timeout: 20_000 });
      assert.deepEqual(await tileIds(page), [undated, late, middle, early], 'the live photo at its place by capture time');

      // German words.
      const big = await f.browser.newContext({ viewport: { width: 1280, height: 800 }, locale: 'de-DE', timezoneId: 'Europe/Berlin' });
      contexts.push(big);
      const wide = await big.newPage();
      const wideProblems = watchConsole(wide);
      await wide.emulateMedia({ reducedMotion: 'reduce' });
      await join(wide, event, 'Carla');
      await wide.waitForFunction(() => document.querySelectorAll('[data-testid=gallery] .tile').length === 4);
      assert.deepEqual(await tileIds(wide), [undated, late, middle, early]);
      assert.equal(await wide.textContent('select[data-testid=gallery-order] option[value=taken]'), 'Nach Aufnahmezeit');
      await thumbsShown(wide);
      await screenshot(wide, `capture-time-gallery-desktop-${backend}`);
      await wide.locator(`[data-upload-id="${late}"] .tile-open`).click();
      const wann = wide.locator('dialog.lightbox[open] [data-testid=taken-at]');
      await wann.waitFor();
      assert.match(await wann.textContent(), /^aufgenommen .*30\. Aug\.? 2025.* 21:00$/);
      await wide.waitForFunction(() => document.querySelector('dialog.lightbox[open] img.lightbox-img')?.complete);
      await screenshot(wide, `capture-time-lightbox-desktop-${backend}`);

      // The organiser's slideshow goes through them in the order they were taken, oldest first.
      const show = await big.newPage();
      const showProblems = watchConsole(show);
      await show.goto(`${server.base}/e/${event.slug}/organiser`);
      await show.fill('input[name=password]', PASSWORD);
      await show.click('.login-form button[type=submit]');
      await show.locator('[data-testid=gallery] .tile').first().waitFor();
      await show.click('button[data-action=slideshow]');
      await show.locator('[data-testid=slideshow]').waitFor({ state: 'visible' });
      for (let i = 0; i < 3; i += 1) {
        await show.waitForFunction((n) => document.querySelector('[data-testid=slideshow]').dataset.shown.split(' ').filter(Boolean).length === n, i + 1);
        await show.keyboard.press('ArrowRight');
      }
      await show.waitForFunction(() => document.querySelector('[data-testid=slideshow]').dataset.shown.split(' ').filter(Boolean).length === 4);
      const sequence = await show.$eval('[data-testid=slideshow]', (el) => el.dataset.shown.split(' ').filter(Boolean));
      assert.deepEqual(sequence, [early, middle, late, undated], 'the slideshow in capture order');

      assert.deepEqual(problems, []);
      assert.deepEqual(wideProblems, []);
      assert.deepEqual(showProblems, []);
    } finally {
      for (const c of contexts) await c.close();
      await server.stop();
    }
  });
}
