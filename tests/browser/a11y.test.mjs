// axe-core on every page a guest, an organiser, a screen and the admin see: the join page, the
// guest's page (with a photo and a video in the gallery, and an entry in the guestbook), the
// lightbox, the dashboard (with a photo waiting for review), the review view, the gallery's
// selection mode, the admin's page, the organiser's slideshow and the venue screen.
// Every rule axe has, the experimental ones too (the accessible name of a control must hold its
// visible words, WCAG 2.5.3). No violation may be left; the counts per page are printed.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { execFileSync } from 'node:child_process';
import { ADMIN_TOKEN, OUTPUT, PASSWORD, backends, fixtures, guestOf, join, startServer, uploadPhoto, unfold } from './helpers.mjs';

const AXE = fs.readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
const f = fixtures({ server: false, photos: 2, photoOptions: { width: 640, height: 480 } });

function clip() {
  const file = path.join(OUTPUT, 'a11y-clip.mp4');
  if (!fs.existsSync(file)) execFileSync('ffmpeg', ['-hide_banner', '-loglevel', 'error', '-y', '-f', 'lavfi', '-i', 'testsrc2=size=320x240:rate=30', '-t', '2', '-c:v', 'libx264', '-pix_fmt', 'yuv420p', file]);
  return file;
}

/** axe's violations on the page as it is now: `[{id, impact, nodes: [target…]}]`. */
async function axe(page) {
  if (!(await page.evaluate(() => 'axe' in window))) await page.addScriptTag({ content: AXE });
  return page.evaluate(async () => {
    const rules = Object.fromEntries(window.axe.getRules(['experimental']).map((r) => [r.ruleId, { enabled: true }]));
    const result = await window.axe.run(document, { rules, resultTypes: ['violations'] });
    return result.violations.map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.map((n) => n.target.join(' ')) }));
  });
}

for (const backend of backends()) {
  test(`${backend}: axe finds no violation on any page`, { timeout: 180_000 }, async () => {
    const server = await startServer({ backend, name: 'a11y' });
    const report = {};
    try {
      const event = await server.createEvent({ name: 'Sommerfest am See' });
      const anna = await guestOf(server, event, 'Anna');
      await uploadPhoto(server, event, anna, f.photos[0]);
      // The guestbook on the guest's page and the dashboard, with an entry.
      const entry = await server.call('POST', `/api/v1/events/${event.slug}/guestbook`, { token: anna, body: { text: 'Alles Gute euch beiden!' } });
      assert.equal(entry.status, 201);
      const form = new FormData();
      form.append('file', new Blob([fs.readFileSync(clip())], { type: 'video/mp4' }), 'clip.mp4');
      const video = await fetch(`${server.base}/api/v1/events/${event.slug}/uploads`, { method: 'POST', headers: { Authorization: `Bearer ${anna}` }, body: form });
      assert.equal(video.status, 201);
      await server.call('PATCH', `/api/v1/events/${event.slug}`, { token: event.organiserToken, body: { review_uploads: true } });
      await uploadPhoto(server, event, anna, f.photos[1]);

      for (const size of [{ width: 390, height: 844, isMobile: true, hasTouch: true, deviceScaleFactor: 2 }, { width: 1280, height: 800 }]) {
        const { width, height, ...more } = size;
        const context = await f.browser.newContext({ viewport: { width, height }, ...more, locale: 'de-DE', bypassCSP: true });
        const at = `${width}x${height}`;
        try {
          const page = await context.newPage();
          await page.goto(event.join_url);
          await page.locator('form[data-testid=join]').waitFor();
          report[`join ${at}`] = await axe(page);

          await join(page, event, 'Ben');
          await page.waitForFunction(() => document.querySelectorAll('[data-testid=gallery] .tile[data-picture=thumb]').length >= 2, null, { timeout: 30_000 });
          await page.locator('[data-testid=guestbook] .guestbook-item').first().waitFor();
          report[`guest ${at}`] = await axe(page);

          await page.locator('[data-testid=gallery] .tile .tile-open').first().click();
          await page.locator('dialog.lightbox[open]').waitFor();
          report[`lightbox ${at}`] = await axe(page);
          await page.keyboard.press('Escape');

          const host = await context.newPage();
          await host.goto(`${server.base}/e/${event.slug}/organiser`);
          await host.fill('input[name=password]', PASSWORD);
          await host.click('.login-form button[type=submit]');
          await host.locator('.dashboard').waitFor({ state: 'visible' });
          await host.waitForFunction(() => document.querySelectorAll('[data-testid=gallery] .tile').length >= 3, null, { timeout: 30_000 });
          await unfold(host.locator('[data-testid=screen-link-card]'));
          report[`dashboard ${at}`] = await axe(host);

          await host.click('[data-testid=pending] button[data-action=review-open]');
          await host.locator('dialog.review[open] img.review-img').waitFor();
          report[`review ${at}`] = await axe(host);
          await host.keyboard.press('Escape');
          await host.locator('dialog.review[open]').waitFor({ state: 'detached' });

          await host.click('button[data-action=select-mode]');
          await host.click('button[data-action=select-waiting]');
          await host.waitForFunction(() => document.querySelectorAll('[data-testid=gallery] .tile.selected').length === 1);
          report[`selection ${at}`] = await axe(host);
          await host.click('button[data-action=select-mode]');

          await host.click('button[data-action=slideshow]');
          await host.locator('[data-testid=slideshow]').waitFor({ state: 'visible' });
          await host.waitForFunction(() => document.querySelector('[data-testid=slideshow]')?.dataset.current);
          report[`slideshow ${at}`] = await axe(host);
          await host.keyboard.press('Escape');

          await host.click('button[data-action=make-screen-link]');
          await host.locator('[data-testid=screen-url]').waitFor({ state: 'visible' });
          const url = await host.locator('[data-testid=screen-url]').inputValue();
          const screen = await context.newPage();
          await screen.goto(url);
          await screen.waitForFunction(() => document.querySelector('[data-testid=slideshow]')?.dataset.current);
          report[`screen ${at}`] = await axe(screen);

          const admin = await context.newPage();
          await admin.goto(`${server.base}/admin`);
          await admin.fill('input[name=admin_token]', ADMIN_TOKEN);
          await admin.click('[data-testid=admin-login] button[type=submit]');
          await admin.locator(`article[data-slug="${event.slug}"]`).waitFor();
          report[`admin ${at}`] = await axe(admin);
        } finally {
          await context.close();
        }
      }
    } finally {
      await server.stop();
    }
    const counts = Object.fromEntries(Object.entries(report).map(([page, v]) => [page, v.length]));
    console.log(`axe violations per page (${backend}): ${JSON.stringify(counts)}`);
    const found = Object.entries(report).filter(([, v]) => v.length);
    assert.deepEqual(found, [], JSON.stringify(found, null, 1));
  });
}
