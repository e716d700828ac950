// Videos through the page: a guest picks a phone's MP4 (its movie header at the end), it is sent
// like a photo, its tile shows a play mark and its length over the poster, and the lightbox plays
// it inline from its original (seeking with ranges). On the organiser's slideshow a video plays
// muted to its end, then the show goes on.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { fixtures, onPhone, join, choose, waitForItems, screenshot, watchConsole, eventually, guestOf, PASSWORD, OUTPUT } from './helpers.mjs';

const f = fixtures({ server: 'video', photos: 1, photoOptions: { width: 640, height: 480 } });

/** A `seconds` long 320×240 H.264 clip with AAC sound, as a phone writes it (movie header last). */
function clip(name, seconds) {
  const file = path.join(OUTPUT, name);
  execFileSync('ffmpeg', [
    '-hide_banner', '-loglevel', 'error', '-y',
    '-f', 'lavfi', '-i', 'testsrc2=size=320x240:rate=30', '-f', 'lavfi', '-i', 'sine=frequency=440',
    '-t', String(seconds), '-c:v', 'libx264', '-pix_fmt', 'yuv420p', '-c:a', 'aac', file,
  ]);
  return file;
}

test('a guest sends a video; its tile shows play and length; the lightbox plays it inline', { timeout: 120_000 }, async () => {
  const video = clip('video-guest.mp4', 3);
  const event = await f.server.createEvent();
  await onPhone(f.browser, { locale: 'de-DE' }, async (page) => {
    const problems = watchConsole(page);
    await join(page, event, 'Filmerin');
    assert.match(await page.getAttribute('input[type=file][multiple]', 'accept'), /video\/mp4/);
    await choose(page, [video]);
    await waitForItems(page, 1, 'done');

    // The tile: the poster (a thumb the server made from a frame), a play mark and 0:03.
    const tile = page.locator('[data-testid=gallery] .tile').first();
    await page.waitForFunction(() => document.querySelector('[data-testid=gallery] .tile')?.dataset.picture === 'thumb', null, { timeout: 30_000 });
    assert.equal(await tile.locator('[data-testid=tile-video]').textContent(), '▶0:03');
    assert.match(await tile.locator('.tile-open').getAttribute('aria-label'), /^Video 0:03: video-guest\.mp4/);
    await page.waitForFunction(() => document.querySelector('[data-testid=gallery] .tile img')?.naturalWidth > 0);
    await screenshot(page, 'video-tile-390x844');

    // The lightbox plays it in place, with its poster.
    await tile.locator('.tile-open').click();
    const player = page.locator('dialog.lightbox[open] [data-testid=lightbox-video]');
    await player.waitFor();
    const attrs = await player.evaluate((v) => ({ controls: v.controls, inline: v.hasAttribute('playsinline'), preload: v.getAttribute('preload'), poster: v.getAttribute('poster'), src: v.getAttribute('src') }));
    assert.equal(attrs.controls, true);
    assert.equal(attrs.inline, true);
    assert.equal(attrs.preload, 'metadata');
    assert.match(attrs.poster || '', /\/preview$/);
    assert.match(attrs.src, /\/original$/);
    await player.evaluate((v) => {
      v.muted = true;
      return v.play();
    });
    await page.waitForFunction(() => document.querySelector('dialog.lightbox[open] video')?.currentTime > 1, null, { timeout: 20_000 });
    const duration = await player.evaluate((v) => v.duration);
    assert.ok(Math.abs(duration - 3) < 0.2, `duration ${duration}`);
    await screenshot(page, 'video-lightbox-390x844');

    // Closing stops it.
    await page.keyboard.press('Escape');
    await page.waitForFunction(() => !document.querySelector('dialog.lightbox[open]'));
    assert.equal(await page.evaluate(() => document.querySelector('dialog.lightbox video')?.paused ?? true), true, 'paused once closed');
    assert.deepEqual(problems, []);
  });
});

test('the slideshow plays a video muted to its end, then goes on', { timeout: 120_000 }, async () => {
  const event = await f.server.createEvent({ name: 'Filmabend' });
  const anna = await guestOf(f.server, event, 'Anna');
  const send = async (file, type) => {
    const form = new FormData();
    form.append('file', new Blob([fs.readFileSync(file)], { type }), path.basename(file));
    const r = await fetch(`${f.server.base}/api/v1/events/${event.slug}/uploads`, { method: 'POST', headers: { Authorization: `Bearer ${anna}` }, body: form });
    const body = await r.json();
    assert.equal(r.status, 201, JSON.stringify(body));
    await eventually(async () => (await f.server.call('GET', `/api/v1/uploads/${body.id}`, { token: anna })).body.status === 'ready', { timeout: 30_000, what: 'ready' });
    return body.id;
  };
  const photo = await send(f.photos[0], 'image/jpeg');
  const video = await send(clip('video-slideshow.mp4', 2), 'video/mp4');
  const desk = await f.browser.newContext({ viewport: { width: 1280, height: 800 }, locale: 'en-GB' });
  try {
    const page = await desk.newPage();
    const problems = watchConsole(page);
    await page.goto(`${f.server.base}/e/${event.slug}/organiser`);
    await page.fill('input[name=password]', PASSWORD);
    await page.click('.login-form button[type=submit]');
    await page.locator('[data-testid=gallery] .tile').nth(1).waitFor();
    await page.click('button[data-action=slideshow]');
    const show = page.locator('[data-testid=slideshow]');
    await show.waitFor({ state: 'visible' });
    // Newest first: the video, playing muted.
    await page.waitForFunction((id) => document.querySelector('[data-testid=slideshow]').dataset.current === id, video, { timeout: 10_000 });
    await page.waitForFunction(() => {
      const v = document.querySelector('[data-testid=slide-video]');
      return v && !v.hidden && v.muted && !v.paused && v.currentTime > 0.5;
    }, null, { timeout: 15_000 });
    await screenshot(page, 'video-slideshow-1280x800');
    // At its end (2 s, well before a photo's 6 s) the photo comes.
    const started = Date.now();
    await page.waitForFunction((id) => document.querySelector('[data-testid=slideshow]').dataset.current === id, photo, { timeout: 15_000 });
    assert.ok(Date.now() - started < 5_500, 'the show went on at the video’s end');
    assert.equal(await page.evaluate(() => document.querySelector('[data-testid=slide-video]').hidden), true);
    await page.waitForFunction(() => document.querySelector('[data-testid=slideshow] img.slide-current')?.naturalWidth > 0);
    assert.deepEqual(problems, []);
  } finally {
    await desk.close();
  }
});
