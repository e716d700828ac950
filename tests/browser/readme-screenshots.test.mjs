// The two pictures the README shows a host, taken from the real pages on every run so they
// never drift from what Confetti looks like: the guest page on a phone, with photos sent and the
// gallery below, and the slideshow on the venue's screen. They are written to docs/screenshots/.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { REPO, fixtures, onPhone, join, choose, waitForItems, eventually, guestOf, uploadPhoto, PASSWORD } from './helpers.mjs';

const f = fixtures({ server: 'readme', photos: 6, photoOptions: { width: 1200, height: 900, noise: false } });
const DIR = path.join(REPO, 'docs', 'screenshots');

test('README screenshots: the guest page with photos sent, and the slideshow', { timeout: 120_000 }, async () => {
  fs.mkdirSync(DIR, { recursive: true });
  const event = await f.server.createEvent({ name: 'Anna & Ben' });
  const others = await guestOf(f.server, event, 'Onkel Paul');
  const ids = [];
  for (const file of f.photos.slice(0, 4)) ids.push(await uploadPhoto(f.server, event, others, file));
  await eventually(async () => {
    const all = await f.server.uploads(event);
    return all.length === ids.length && all.every((u) => u.status === 'ready');
  }, { timeout: 60_000, what: 'the first photos ready' });

  const guestShot = path.join(DIR, 'guest-page.png');
  await onPhone(f.browser, { locale: 'en-GB' }, async (page) => {
    await join(page, event, 'Tante Erna');
    await choose(page, f.photos.slice(4, 6));
    await waitForItems(page, 2, 'done', 60_000);
    // Every tile made (no "processing" badge) and drawn.
    await page.waitForFunction(() => {
      const tiles = [...document.querySelectorAll('[data-testid=gallery] .tile')];
      return tiles.length === 6 && tiles.every((t) => t.dataset.status === 'ready' && [...t.querySelectorAll('img')].every((i) => i.complete && i.naturalWidth > 0));
    }, null, { timeout: 60_000 });
    await page.screenshot({ path: guestShot, fullPage: false });
  });

  const slideShot = path.join(DIR, 'slideshow.png');
  const desk = await f.browser.newContext({ viewport: { width: 1280, height: 720 }, locale: 'en-GB' });
  try {
    const page = await desk.newPage();
    await page.goto(`${f.server.base}/e/${event.slug}/organiser`);
    await page.fill('input[name=password]', PASSWORD);
    await page.click('.login-form button[type=submit]');
    await page.locator('[data-testid=gallery] .tile').first().waitFor();
    await page.click('button[data-action=slideshow]');
    await page.waitForFunction(() => {
      const img = document.querySelector('[data-testid=slideshow] img');
      const qr = document.querySelector('[data-testid=slide-qr]');
      return img?.complete && img.naturalWidth > 0 && qr?.naturalWidth > 0;
    }, null, { timeout: 30_000 });
    // Past the cross-fade.
    await page.waitForTimeout(1500);
    await page.screenshot({ path: slideShot, fullPage: false });
  } finally {
    await desk.close();
  }
  for (const file of [guestShot, slideShot]) assert.ok(fs.statSync(file).size > 20_000, `${file} is a real picture`);
});
