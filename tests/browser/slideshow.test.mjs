// The slideshow on a screen at the venue: the event's name, the join QR code in a corner,
// photos that arrive while it runs shown in their order of arrival before the loop goes on,
// pause, next and previous by keyboard and buttons, caption and uploader shown as text, and
// no cross-fade when the screen asks for reduced motion.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fixtures, onPhone, screenshot, eventually, sleep, PASSWORD, watchConsole, guestOf } from './helpers.mjs';

const f = fixtures({ server: 'slideshow', photos: 4, photoOptions: { width: 640, height: 480 } });

/** Uploads one photo with a caption through the API and waits until it is ready (its preview made). */
async function uploadReady(event, token, file, caption) {
  const form = new FormData();
  form.append('caption', caption);
  form.append('file', new Blob([fs.readFileSync(file)], { type: 'image/jpeg' }), path.basename(file));
  const r = await fetch(`${f.server.base}/api/v1/events/${event.slug}/uploads`, { method: 'POST', headers: { Authorization: `Bearer ${token}` }, body: form });
  const body = await r.json();
  assert.equal(r.status, 201, JSON.stringify(body));
  await eventually(async () => (await f.server.call('GET', `/api/v1/uploads/${body.id}`, { token })).body.status === 'ready', { timeout: 30_000, what: `${caption} ready` });
  return body.id;
}

async function organiserSlideshow(page, event) {
  await page.goto(`${f.server.base}/e/${event.slug}/organiser`);
  await page.fill('input[name=password]', PASSWORD);
  await page.click('.login-form button[type=submit]');
  await page.locator('[data-testid=gallery] .tile').first().waitFor();
  await page.click('button[data-action=slideshow]');
  await page.locator('[data-testid=slideshow]').waitFor({ state: 'visible' });
  await page.waitForFunction(() => {
    const img = document.querySelector('[data-testid=slideshow] img');
    return img?.dataset.uploadId && img.complete && img.naturalWidth > 0;
  });
}

const shown = (page) => page.$eval('[data-testid=slideshow]', (el) => el.dataset.shown.split(' ').filter(Boolean));
const current = (page) => page.$eval('[data-testid=slideshow] img', (img) => img.dataset.uploadId);

test('slideshow: new photos in arrival order, pause, next and previous, QR code, caption and name', { timeout: 120_000 }, async () => {
  const event = await f.server.createEvent({ name: 'Sommerfest am See' });
  const anna = await guestOf(f.server, event, 'Anna');
  const first = await uploadReady(event, anna, f.photos[0], 'Before the slideshow');
  const desk = await f.browser.newContext({ viewport: { width: 1280, height: 800 }, locale: 'en-GB' });
  try {
    const page = await desk.newPage();
    const problems = watchConsole(page);
    await organiserSlideshow(page, event);
    assert.equal(await current(page), first);
    assert.equal(await page.textContent('[data-testid=slide-event]'), 'Sommerfest am See');
    await page.waitForFunction(() => document.querySelector('[data-testid=slide-qr]')?.naturalWidth > 0, null, { timeout: 10_000 });
    assert.equal(await page.textContent('.slide-qr-label'), 'Add your photos');

    // Three photos arrive one after the other while it runs.
    const arrivals = [];
    for (const [i, caption] of ['Photo A', 'Photo B', 'Photo C'].entries()) arrivals.push(await uploadReady(event, anna, f.photos[i + 1], caption));
    await page.waitForFunction((id) => document.querySelector('[data-testid=slideshow]').dataset.shown.split(' ').includes(id), arrivals[2], { timeout: 30_000 });
    const sequence = await shown(page);
    const start = sequence.indexOf(arrivals[0]);
    assert.ok(start > 0, `the first arrival is shown after the photo on screen: ${sequence}`);
    assert.deepEqual(sequence.slice(start, start + 3), arrivals, 'each arrival in its turn, none skipped, none ahead of another');
    await page.waitForFunction((id) => {
      const img = document.querySelector('[data-testid=slideshow] img');
      return img.dataset.uploadId === id && img.complete && img.naturalWidth > 0;
    }, arrivals[2]);
    assert.equal(await page.textContent('[data-testid=slide-caption]'), 'Photo C');
    assert.equal(await page.textContent('[data-testid=slide-by]'), 'by Anna');
    await page.mouse.move(640, 400);
    await sleep(1300); // the cross-fade's end
    await screenshot(page, 'slideshow-venue-1280x800');

    // Space pauses: the photo stays past its usual time.
    await page.keyboard.press(' ');
    assert.equal(await page.getAttribute('[data-testid=slideshow]', 'data-state'), 'paused');
    const held = (await shown(page)).length;
    await sleep(7500);
    assert.equal(await current(page), arrivals[2], 'paused: the same photo');
    assert.equal((await shown(page)).length, held);

    // The right arrow goes on (still paused), the left arrow comes back, the buttons do the same.
    await page.keyboard.press('ArrowRight');
    await page.waitForFunction((id) => document.querySelector('[data-testid=slideshow] img').dataset.uploadId !== id, arrivals[2]);
    assert.equal((await shown(page)).length, held + 1, 'next shows one more photo');
    assert.equal(await page.getAttribute('[data-testid=slideshow]', 'data-state'), 'paused');
    await page.keyboard.press('ArrowLeft');
    assert.equal(await current(page), arrivals[2], 'previous comes back');
    await page.mouse.move(600, 300);
    await page.click('button[data-action=slide-next]');
    assert.notEqual(await current(page), arrivals[2]);
    await page.click('button[data-action=slide-play]');
    assert.equal(await page.getAttribute('[data-testid=slideshow]', 'data-state'), 'playing');

    // Idle: the controls fade away.
    await page.waitForFunction(() => document.querySelector('[data-testid=slideshow]').classList.contains('idle'), null, { timeout: 5000 });
    await page.keyboard.press('Escape');
    await page.locator('[data-testid=slideshow]').waitFor({ state: 'hidden' });
    assert.deepEqual(problems, []);
  } finally {
    await desk.close();
  }
});

test('slideshow on a phone, with reduced motion: no cross-fade, German words', { timeout: 60_000 }, async () => {
  const event = await f.server.createEvent({ name: 'Polterabend bei Jana & Tom' });
  const anna = await guestOf(f.server, event, 'Tante Erna');
  await uploadReady(event, anna, f.photos[0], 'Der Kuchen!\nZweite Zeile');
  await onPhone(f.browser, { locale: 'de-DE' }, async (page) => {
    await page.emulateMedia({ reducedMotion: 'reduce' });
    await organiserSlideshow(page, event);
    await page.waitForFunction(() => document.querySelector('[data-testid=slide-qr]')?.naturalWidth > 0);
    assert.equal(await page.textContent('.slide-qr-label'), 'Eure Fotos hinzufügen');
    assert.equal(await page.textContent('[data-testid=slide-by]'), 'von Tante Erna');
    assert.equal(await page.textContent('[data-testid=slide-caption]'), 'Der Kuchen!\nZweite Zeile');
    const transition = await page.$eval('[data-testid=slideshow] img', (img) => getComputedStyle(img).transitionDuration);
    assert.equal(transition, '0s');
    await page.tap('[data-testid=slideshow]');
    await screenshot(page, 'slideshow-venue-390x844');
  });
});
