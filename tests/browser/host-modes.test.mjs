// The host modes in real pages, on every backend: the review gate end to end with two guests'
// phones and the organiser's dashboard open at once (the uploader sees "waiting for approval",
// the other guest nothing, until the organiser approves and the photo appears live, without a
// reload), the private gallery's words, and a gallery that opens at its time by itself.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fixtures, phone, startServer, join, choose, waitForItems, screenshot, backends, watchConsole, PASSWORD, unfold, guestOf, uploadPhoto } from './helpers.mjs';

const f = fixtures({ server: false, photos: 2, photoOptions: { prefix: 'modes', width: 640, height: 480 } });

async function setModes(server, event, body) {
  const r = await server.call('PATCH', `/api/v1/events/${event.slug}`, { token: event.organiserToken, body });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body;
}

for (const backend of backends()) {
  test(`${backend}: review gate — the uploader waits, the other guest sees nothing until the organiser approves, then live`, { timeout: 120_000 }, async () => {
    const server = await startServer({ backend, name: 'host-modes' });
    const contexts = [];
    try {
      const event = await server.createEvent({ name: 'Gartenfest' });
      const open = async (options) => {
        const context = await phone(f.browser, options);
        contexts.push(context);
        const page = await context.newPage();
        return { page, problems: watchConsole(page) };
      };
      const host = await open({ locale: 'en-GB' });
      const anna = await open({ locale: 'de-DE' });
      const ben = await open({ locale: 'en-GB' });

      // The organiser switches the gate on in the "Host modes" card.
      await host.page.goto(`${server.base}/e/${event.slug}/organiser`);
      await host.page.fill('input[name=password]', PASSWORD);
      await host.page.click('.login-form button[type=submit]');
      await host.page.locator('[data-testid=host-modes]').waitFor({ state: 'visible' });
      await unfold(host.page.locator('[data-testid=host-modes]'));
      await host.page.check('input[name=review_uploads]');
      await host.page.waitForFunction(() => document.querySelector('[data-testid=host-modes] .note').textContent === 'Saved.');
      const now = await server.call('GET', `/api/v1/events/${event.slug}`);
      assert.equal(now.body.review_uploads, true, 'the switch changed the event');
      await host.page.locator('[data-testid=pending]').waitFor({ state: 'visible' });
      assert.equal(await host.page.getAttribute('[data-testid=pending]', 'data-pending'), '0');

      // Ben is in the gallery, empty so far, and told that the hosts look at each photo first.
      await join(ben.page, event, 'Ben');
      await ben.page.locator('[data-testid=gallery-mode] p[data-mode=review]').waitFor({ state: 'visible' });
      assert.equal(await ben.page.textContent('[data-testid=gallery-mode] p[data-mode=review]'), 'The hosts look at each photo before the others see it.');
      await ben.page.evaluate(() => { window.notReloaded = true; });

      // Anna uploads: her row and her tile say the photo waits for the hosts.
      await join(anna.page, event, 'Anna');
      await choose(anna.page, [f.photos[0]]);
      await waitForItems(anna.page, 1, 'done');
      await anna.page.waitForFunction(() => document.querySelector('[data-client-upload-id] .q-msg')?.textContent === 'Wartet auf die Freigabe der Gastgeber');
      const [row] = await server.uploads(event);
      assert.equal(row.review, 'pending');
      const tile = `[data-testid=gallery] .tile[data-upload-id="${row.id}"]`;
      await anna.page.waitForFunction((sel) => document.querySelector(sel)?.dataset.review === 'pending', tile);
      await anna.page.waitForFunction((sel) => document.querySelector(`${sel} img`)?.complete, tile, { timeout: 20_000 });
      assert.equal(await anna.page.textContent(`${tile} .badge`), 'in Prüfung');
      await screenshot(anna.page, `host-modes-uploader-waiting-${backend}`);

      // The organiser's list has it; Ben still sees nothing.
      await host.page.waitForFunction(() => document.querySelector('[data-testid=pending]').dataset.pending === '1', null, { timeout: 20_000 });
      assert.equal(await host.page.textContent('[data-testid=pending] h2'), 'Pending (1)');
      await host.page.waitForFunction((id) => document.querySelector(`.pending-item[data-upload-id="${id}"] img`)?.complete, row.id, { timeout: 20_000 });
      await host.page.click('[data-testid=download-menu] > summary');
      assert.equal(await host.page.isVisible('a[data-action=download-with-pending]'), true, 'the export offers the waiting ones');
      await host.page.click('[data-testid=download-menu] > summary');
      await host.page.locator('[data-testid=pending]').scrollIntoViewIfNeeded();
      await screenshot(host.page, `host-modes-dashboard-pending-${backend}`);
      assert.equal(await ben.page.locator(tile).count(), 0, 'another guest does not see a waiting photo');

      // Approve: the photo appears in Ben's open gallery, live.
      await host.page.click(`.pending-item[data-upload-id="${row.id}"] button[data-action=approve]`);
      await host.page.waitForFunction(() => document.querySelector('[data-testid=pending]').dataset.pending === '0');
      await ben.page.waitForFunction((sel) => document.querySelector(`${sel} img`)?.complete, tile, { timeout: 20_000 });
      assert.equal(await ben.page.evaluate(() => window.notReloaded), true, 'without a reload');
      assert.equal(await ben.page.getAttribute(tile, 'data-review'), 'approved');
      await screenshot(ben.page, `host-modes-other-guest-after-approval-${backend}`);
      // Anna's row and tile stop saying it waits.
      await anna.page.waitForFunction((sel) => document.querySelector(sel)?.dataset.review === 'approved', tile, { timeout: 20_000 });
      await anna.page.waitForFunction(() => document.querySelector('[data-client-upload-id] .q-msg')?.hidden === true);

      for (const p of [host, anna, ben]) assert.deepEqual(p.problems, []);
    } finally {
      for (const c of contexts) await c.close();
      await server.stop();
    }
  });

  test(`${backend}: a private gallery says so; a gallery that opens later says when and opens by itself`, { timeout: 90_000 }, async () => {
    const server = await startServer({ backend, name: 'host-modes-reveal' });
    const contexts = [];
    try {
      const event = await server.createEvent({ name: 'Sommerfest' });
      const anna = await guestOf(server, event, 'Anna');
      const annas = await uploadPhoto(server, event, anna, f.photos[1]);
      await setModes(server, event, { gallery: 'own_uploads' });

      const context = await phone(f.browser, { locale: 'en-GB', timezoneId: 'Pacific/Auckland' });
      contexts.push(context);
      const page = await context.newPage();
      const problems = watchConsole(page);
      await join(page, event, 'Ben');
      await page.locator('[data-testid=gallery-mode] p[data-mode=drop-box]').waitFor({ state: 'visible' });
      assert.equal(await page.textContent('[data-testid=gallery-mode] p[data-mode=drop-box]'), 'Your photos go to the hosts; the gallery is private.');
      await page.waitForFunction(() => !document.querySelector('.gallery-section .empty').hidden);
      assert.equal(await page.locator('[data-testid=gallery] .tile').count(), 0, 'Anna’s photo is not shown');
      await screenshot(page, `host-modes-drop-box-${backend}`);

      // The gallery opens in a few seconds: the page says when, in the guest's time zone.
      const opensAt = new Date(Date.now() + 8000);
      const changed = await setModes(server, event, { gallery: 'everyone', gallery_opens_at: opensAt.toISOString() });
      assert.equal(changed.gallery_open, false);
      await page.reload();
      const when = new Intl.DateTimeFormat('en-GB', { weekday: 'short', day: 'numeric', month: 'short', hour: '2-digit', minute: '2-digit', timeZone: 'Pacific/Auckland' }).format(opensAt);
      await page.locator('[data-testid=gallery-mode] p[data-mode=opens-at]').waitFor({ state: 'visible' });
      assert.equal(await page.textContent('[data-testid=gallery-mode] p[data-mode=opens-at]'), `The gallery opens on ${when}. Until then you see only your own photos.`);
      assert.match(when, /^[A-Z][a-z]{2} \d{1,2} [A-Z][a-z]{2}, \d{2}:\d{2}$/, 'like "Sat 14 Jun, 22:00"');
      assert.equal(await page.locator('[data-testid=gallery] .tile').count(), 0);
      await screenshot(page, `host-modes-opens-later-${backend}`);
      await page.evaluate(() => { window.notReloaded = true; });

      // At that time the gallery opens without a reload.
      await page.waitForFunction((id) => document.querySelector(`[data-testid=gallery] .tile[data-upload-id="${id}"] img`)?.complete, annas, { timeout: 30_000 });
      assert.equal(await page.evaluate(() => window.notReloaded), true);
      assert.equal(await page.isVisible('[data-testid=gallery-mode]'), false, 'nothing left to say');

      // In German, the same words in German.
      await setModes(server, event, { gallery_opens_at: new Date(Date.now() + 3_600_000).toISOString() });
      const german = await phone(f.browser, { locale: 'de-DE' });
      contexts.push(german);
      const gpage = await german.newPage();
      await join(gpage, event, 'Clara');
      await gpage.locator('[data-testid=gallery-mode] p[data-mode=opens-at]').waitFor({ state: 'visible' });
      assert.match(await gpage.textContent('[data-testid=gallery-mode] p[data-mode=opens-at]'), /^Die Galerie öffnet am .+\. Bis dahin siehst du nur deine eigenen Fotos\.$/);
      assert.deepEqual(problems, []);
    } finally {
      for (const c of contexts) await c.close();
      await server.stop();
    }
  });
}
