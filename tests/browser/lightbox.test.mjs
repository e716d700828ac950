// The lightbox on a phone and on a desktop: previous/next at the photo's sides and the arrow
// keys, a finger's swipe, the phone's Back button closing the photo (not the event), the Save
// link to the original, and on a wide screen the comments beside the photo.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { fixtures, onPhone, join, choose, waitForItems, screenshot, watchConsole, fileSize } from './helpers.mjs';

const f = fixtures({ server: 'lightbox', photos: 3, photoOptions: { width: 1200, height: 800 } });

const current = (page) => page.getAttribute('dialog.lightbox[open]', 'data-upload-id');

/** Uploads the three photos and waits for their thumbnails; returns the gallery's order. */
async function threePhotos(page, event, name) {
  await join(page, event, name);
  await choose(page, f.photos);
  await waitForItems(page, 3, 'done');
  await page.waitForFunction(() => {
    const tiles = [...document.querySelectorAll('[data-testid=gallery] .tile')];
    return tiles.length === 3 && tiles.every((t) => t.dataset.picture === 'thumb');
  }, null, { timeout: 30_000 });
  return page.$$eval('[data-testid=gallery] .tile', (els) => els.map((e) => e.dataset.uploadId));
}

/** A one-finger swipe over the photo, as a phone's touch screen sends it. */
async function swipe(page, cdp, dx, dy = 0) {
  const box = await page.locator('dialog.lightbox[open] [data-testid=lightbox-stage]').boundingBox();
  const x = box.x + box.width / 2 - dx / 2;
  const y = box.y + box.height / 2;
  await cdp.send('Input.dispatchTouchEvent', { type: 'touchStart', touchPoints: [{ x, y }] });
  for (let i = 1; i <= 8; i += 1) {
    await cdp.send('Input.dispatchTouchEvent', { type: 'touchMove', touchPoints: [{ x: x + (dx * i) / 8, y: y + (dy * i) / 8 }] });
  }
  await cdp.send('Input.dispatchTouchEvent', { type: 'touchEnd', touchPoints: [] });
}

test('previous/next at the sides, arrow keys and swipes step through the photos; Back closes the photo and stays on the event', { timeout: 90_000 }, async () => {
  const event = await f.server.createEvent();
  await onPhone(f.browser, { locale: 'en-US' }, async (page, context) => {
    const problems = watchConsole(page);
    const order = await threePhotos(page, event, 'Swiper');
    const eventPath = new URL(page.url()).pathname;

    await page.locator('[data-testid=gallery] .tile-open').nth(1).click();
    await page.waitForFunction(() => document.querySelector('dialog.lightbox[open] .lightbox-img')?.naturalWidth > 0);
    assert.equal(await current(page), order[1]);
    const prev = page.locator('dialog.lightbox[open] button[data-action=previous]');
    const next = page.locator('dialog.lightbox[open] button[data-action=next]');
    assert.ok(await prev.isVisible(), 'previous is shown');
    assert.ok(await next.isVisible(), 'next is shown');
    assert.equal(await prev.getAttribute('aria-label'), 'Previous');
    // The buttons sit at the photo's sides, over it.
    const stage = await page.locator('dialog.lightbox[open] [data-testid=lightbox-stage]').boundingBox();
    const p = await prev.boundingBox();
    const n = await next.boundingBox();
    assert.ok(p.x < stage.x + stage.width / 4 && n.x > stage.x + (stage.width * 3) / 4, 'left and right');
    assert.ok(p.y > stage.y && p.y + p.height < stage.y + stage.height, 'within the photo’s height');
    const download = page.locator('dialog.lightbox[open] a[data-action=download]');
    assert.ok(await download.isVisible(), 'Save is on the first screen');
    await screenshot(page, 'lightbox-nav-390x844');

    await next.click();
    await page.waitForFunction((id) => document.querySelector('dialog.lightbox[open]')?.dataset.uploadId === id, order[2]);
    assert.equal(await next.isVisible(), false, 'no next after the last photo');
    assert.ok(await prev.isVisible());
    await page.keyboard.press('ArrowLeft');
    assert.equal(await current(page), order[1], 'arrow left');
    await page.keyboard.press('ArrowLeft');
    assert.equal(await current(page), order[0]);
    assert.equal(await prev.isVisible(), false, 'no previous before the first photo');
    await page.keyboard.press('ArrowRight');
    assert.equal(await current(page), order[1], 'arrow right');

    // A finger: leftwards shows the next photo, rightwards the previous; a mostly vertical move
    // or a short one does not step.
    const cdp = await context.newCDPSession(page);
    await swipe(page, cdp, -200);
    await page.waitForFunction((id) => document.querySelector('dialog.lightbox[open]')?.dataset.uploadId === id, order[2]);
    await swipe(page, cdp, 200);
    await page.waitForFunction((id) => document.querySelector('dialog.lightbox[open]')?.dataset.uploadId === id, order[1]);
    await swipe(page, cdp, -60, 150);
    await swipe(page, cdp, -20);
    await page.waitForTimeout(300);
    assert.equal(await current(page), order[1], 'a scroll or a twitch is not a swipe');

    // The arrow keys in the comment field move its caret, not the photo.
    await page.locator('dialog.lightbox[open] input[name=text]').fill('ab');
    await page.locator('dialog.lightbox[open] input[name=text]').press('ArrowLeft');
    assert.equal(await current(page), order[1]);

    // Back closes the photo (however many were stepped through) and stays on the event.
    await page.evaluate(() => history.back());
    await page.locator('dialog.lightbox[open]').waitFor({ state: 'detached' });
    assert.equal(new URL(page.url()).pathname, eventPath);
    assert.ok(await page.locator('.uploader').isVisible(), 'still on the event page');
    assert.equal(await page.locator('[data-testid=gallery] .tile').count(), 3);

    // Closing with ✕ takes the photo's history entry back: the next Back leaves nothing open
    // and the entry before is the event page's own.
    const depth = await page.evaluate(() => history.length);
    await page.locator('[data-testid=gallery] .tile-open').first().click();
    assert.equal(await page.evaluate(() => history.state?.confettiPhoto), order[0]);
    await page.click('dialog.lightbox[open] button[data-action=close]');
    await page.waitForFunction(() => !history.state?.confettiPhoto);
    assert.equal(await page.evaluate(() => history.length), depth, 'the entry is reused, not stacked');

    // Closed and opened again at once: Back still closes that photo.
    await page.locator('[data-testid=gallery] .tile-open').nth(2).click();
    await page.click('dialog.lightbox[open] button[data-action=close]');
    await page.locator('[data-testid=gallery] .tile-open').nth(2).click();
    await page.waitForFunction(() => history.state?.confettiPhoto);
    await page.evaluate(() => history.back());
    await page.locator('dialog.lightbox[open]').waitFor({ state: 'detached' });
    assert.equal(new URL(page.url()).pathname, eventPath);
    assert.deepEqual(problems, []);
  });
});

test('Save downloads the original under its file name', { timeout: 60_000 }, async () => {
  const event = await f.server.createEvent();
  await onPhone(f.browser, { locale: 'de-DE' }, async (page) => {
    await join(page, event, 'Sammlerin');
    await choose(page, [f.photos[0]]);
    await waitForItems(page, 1, 'done');
    const [upload] = await f.server.uploads(event);
    await page.locator('[data-testid=gallery] .tile-open').first().click();
    const link = page.locator('dialog.lightbox[open] a[data-action=download]');
    assert.equal(await link.textContent(), '⤓Speichern');
    assert.equal(await link.getAttribute('href'), `/api/v1/uploads/${upload.id}/original`);
    assert.equal(await link.getAttribute('download'), upload.filename);
    const [download] = await Promise.all([page.waitForEvent('download'), link.click()]);
    assert.equal(download.suggestedFilename(), upload.filename);
    const saved = await download.path();
    assert.equal(fs.statSync(saved).size, fileSize(f.photos[0]), 'the original’s bytes');
    assert.ok(await page.locator('dialog.lightbox[open]').isVisible(), 'the photo stays open');
  });
});

test('on a wide screen the comments are beside the photo, not below it', { timeout: 60_000 }, async () => {
  const event = await f.server.createEvent();
  const context = await f.browser.newContext({ viewport: { width: 1280, height: 800 }, locale: 'en-US' });
  try {
    const page = await context.newPage();
    const problems = watchConsole(page);
    await threePhotos(page, event, 'Desk');
    await page.locator('[data-testid=gallery] .tile-open').nth(1).click();
    await page.waitForFunction(() => document.querySelector('dialog.lightbox[open] .lightbox-img')?.naturalWidth > 0);
    for (const text of ['What a view!', 'Send me this one please 😍']) {
      await page.locator('dialog.lightbox[open] input[name=text]').fill(text);
      await page.locator('dialog.lightbox[open] .comment-form button[type=submit]').click();
    }
    await page.waitForFunction(() => document.querySelectorAll('dialog.lightbox .comment').length === 2);
    const stage = await page.locator('dialog.lightbox[open] [data-testid=lightbox-stage]').boundingBox();
    const comments = await page.locator('dialog.lightbox[open] [data-testid=comments]').boundingBox();
    const form = await page.locator('dialog.lightbox[open] .comment-form').boundingBox();
    assert.ok(comments.x >= stage.x + stage.width - 1, 'the comments start right of the photo');
    assert.ok(comments.y < stage.y + stage.height / 2, 'beside it, not below');
    assert.ok(form.y + form.height <= 800, 'the comment field on the screen');
    assert.ok(stage.height >= 700, 'the photo uses the screen’s height');
    for (const action of ['previous', 'next', 'close', 'download', 'like']) {
      assert.ok(await page.locator(`dialog.lightbox[open] [data-action=${action}]`).isVisible(), action);
    }
    await screenshot(page, 'lightbox-desktop-1280x800');
    assert.deepEqual(problems, []);
  } finally {
    await context.close();
  }
});
