// The organiser's dashboard on a phone: the join link copied (clipboard, or shown selected
// where there is none), the table card for print, who sent each photo under its tile, the two
// downloads (hidden photos left out, or included on request) with the line saying how many are
// hidden, and the guests' quota in photos, as guests read theirs.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fixtures, onPhone, screenshot, eventually, PASSWORD, OUTPUT, watchConsole, guestOf, uploadPhoto } from './helpers.mjs';

const f = fixtures({ server: 'dashboard', photos: 3, photoOptions: { width: 320, height: 240 } });

async function login(page, event) {
  await page.goto(`${f.server.base}/e/${event.slug}/organiser`);
  await page.fill('input[name=password]', PASSWORD);
  await page.click('.login-form button[type=submit]');
  await page.locator('.dashboard').waitFor({ state: 'visible' });
}

/** How many files a ZIP holds: its central directory has one header per entry. */
function zipEntries(bytes) {
  let n = 0;
  for (let i = bytes.indexOf('PK\x01\x02', 0, 'latin1'); i >= 0; i = bytes.indexOf('PK\x01\x02', i + 4, 'latin1')) n += 1;
  return n;
}

test('dashboard: names under tiles, both downloads and the hidden count, copy link, quota, table card', { timeout: 90_000 }, async () => {
  const event = await f.server.createEvent({ name: 'Sommerfest am See' });
  const anna = await guestOf(f.server, event, 'Anna');
  const ben = await guestOf(f.server, event, 'Ben Überlang-Name mit Bindestrich');
  const ids = [await uploadPhoto(f.server, event, anna, f.photos[0]), await uploadPhoto(f.server, event, ben, f.photos[1]), await uploadPhoto(f.server, event, anna, f.photos[2])];
  const hide = await f.server.call('PATCH', `/api/v1/uploads/${ids[1]}`, { token: event.organiserToken, body: { hidden: true } });
  assert.equal(hide.status, 200);

  await onPhone(f.browser, { locale: 'en-GB' }, async (page, context) => {
    const problems = watchConsole(page);
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: f.server.base });
    await login(page, event);

    // Who sent what, under each tile.
    await page.waitForFunction(() => document.querySelectorAll('[data-testid=gallery] .tile [data-testid=tile-by]').length === 3);
    const names = Object.fromEntries(await page.$$eval('[data-testid=gallery] .tile', (els) => els.map((e) => [e.dataset.uploadId, e.querySelector('[data-testid=tile-by]').textContent])));
    assert.deepEqual(names, { [ids[0]]: 'Anna', [ids[1]]: 'Ben Überlang-Name mit Bindestrich', [ids[2]]: 'Anna' });

    // The plain download leaves the hidden one out and says so; the other takes it along.
    await page.waitForFunction(() => document.querySelector('[data-testid=hidden-note]')?.dataset.hidden === '1');
    assert.equal(await page.textContent('[data-testid=hidden-note]'), '1 hidden photo is left out of the first download.');
    assert.equal(await page.textContent('a[data-action=download]'), 'Download the visible photos (ZIP)');
    const plain = await page.getAttribute('a[data-action=download]', 'href');
    const all = await page.getAttribute('a[data-action=download-with-hidden]', 'href');
    assert.equal(plain, `/api/v1/events/${event.slug}/export.zip`);
    assert.equal(all, `/api/v1/events/${event.slug}/export.zip?include_hidden=true`);
    const fetchZip = (href) => page.evaluate((href) => fetch(href).then(async (r) => ({ status: r.status, b64: btoa(String.fromCharCode(...new Uint8Array(await r.arrayBuffer()))) })), href);
    for (const [href, n] of [[plain, 2], [all, 3]]) {
      const zip = await fetchZip(href);
      assert.equal(zip.status, 200);
      assert.equal(zipEntries(Buffer.from(zip.b64, 'base64')), n, href);
    }

    // Copy link: to the clipboard.
    await page.click('button[data-action=copy-link]');
    await page.waitForFunction(() => document.querySelector('.share .note').textContent === 'Link copied.');
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), event.join_url);
    assert.equal(await page.isVisible('[data-testid=copy-fallback]'), false);

    // The quota in photos, as guests read theirs, with what it comes to in bytes.
    assert.equal(await page.inputValue('input[name=guest_quota_photos]'), '256');
    assert.equal(await page.textContent('[data-testid=quota-shown]'), '≈ 1 GB per guest (a phone photo ≈ 4 MB).');
    await page.fill('input[name=guest_quota_photos]', '100');
    assert.equal(await page.textContent('[data-testid=quota-shown]'), '≈ 400 MB per guest (a phone photo ≈ 4 MB).');
    await page.click('.quota-form button[type=submit]');
    await eventually(async () => (await f.server.call('GET', `/api/v1/events/${event.slug}`, { token: event.organiserToken })).body.guest_quota_bytes === 100 * 4 * 1024 * 1024, { what: 'the new quota' });

    await screenshot(page, 'dashboard-390x844');
    await page.screenshot({ path: path.join(OUTPUT, 'dashboard-390x844-full.png'), fullPage: true });

    // The table card: on paper only, with the name, the QR code and both languages.
    assert.equal(await page.isVisible('[data-testid=table-card]'), false, 'not on screen');
    await page.emulateMedia({ media: 'print' });
    await page.waitForFunction(() => document.querySelector('.table-card-qr')?.naturalWidth > 0);
    assert.equal(await page.isVisible('[data-testid=table-card]'), true);
    assert.equal(await page.isVisible('[data-testid=gallery]'), false, 'the gallery is not printed');
    assert.equal(await page.isVisible('header.top'), false);
    assert.deepEqual(await page.$$eval('.table-card > *', (els) => els.map((e) => e.textContent)), ['Sommerfest am See', '', 'Scannen und eure Fotos teilen', 'Scan to share your photos', event.join_url]);
    await page.screenshot({ path: path.join(OUTPUT, 'table-card-print.png'), fullPage: true });
    await page.emulateMedia({ media: 'screen' });
    assert.deepEqual(problems, []);
  });
});

test('dashboard: without a clipboard the join link is shown selected; no hidden photos, no second download', { timeout: 60_000 }, async () => {
  const event = await f.server.createEvent({ name: 'Polterabend' });
  const anna = await guestOf(f.server, event, 'Anna');
  await uploadPhoto(f.server, event, anna, f.photos[0]);
  await onPhone(f.browser, { locale: 'de-DE' }, async (page) => {
    // As on a plain-http LAN address, where browsers give no clipboard.
    await page.addInitScript(() => Object.defineProperty(Navigator.prototype, 'clipboard', { get: () => undefined }));
    await login(page, event);
    await page.locator('[data-testid=gallery] .tile').first().waitFor();
    await page.click('button[data-action=copy-link]');
    const fallback = page.locator('[data-testid=copy-fallback]');
    await fallback.waitFor({ state: 'visible' });
    assert.equal(await fallback.inputValue(), event.join_url);
    const selection = await page.evaluate(() => {
      const el = document.activeElement;
      return { focused: el?.dataset.testid, start: el.selectionStart, end: el.selectionEnd, length: el.value.length };
    });
    assert.deepEqual(selection, { focused: 'copy-fallback', start: 0, end: selection.length, length: selection.length });
    assert.match(await page.textContent('.share .note'), /markiert/);
    assert.equal(await page.textContent('a[data-action=download]'), 'Alle Fotos herunterladen (ZIP)');
    await page.waitForFunction(() => document.querySelector('[data-testid=hidden-note]')?.hidden === true);
    assert.equal(await page.isVisible('a[data-action=download-with-hidden]'), false);
    assert.equal(await page.textContent('[data-testid=quota-shown]'), '≈ 1 GB pro Gast (ein Handyfoto ≈ 4 MB).');
    await screenshot(page, 'dashboard-copy-fallback-390x844');
  });
});
