// The organiser's page: log in, the QR code of the join link, uploads open/closed, the
// guests' quota, hiding and deleting a photo, the ZIP of everything, and the live slideshow
// that shows a guest's new photo as it arrives.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fixtures, onPhone, phone, join, choose, waitForItems, screenshot, eventually, PASSWORD, watchConsole, firstLine } from './helpers.mjs';

const f = fixtures({ server: 'organiser', photos: 3, photoOptions: { width: 640, height: 480 } });

test('organiser: login, QR code, uploads closed and opened, quota, ZIP', { timeout: 60_000 }, async () => {
  const event = await f.server.createEvent({ name: 'Sommerfest' });
  await onPhone(f.browser, { locale: 'en-GB' }, async (page, context) => {
    const problems = watchConsole(page);
    await page.goto(`${f.server.base}/e/${event.slug}/organiser`);
    await page.fill('input[name=password]', 'wrong password');
    await page.click('.login-form button[type=submit]');
    await page.locator('.login-form .error').waitFor();
    assert.equal(await firstLine(page.locator('.login-form .error')), 'Wrong password.');
    assert.equal(await page.textContent('.login-form .error .server-detail'), 'The server says: “wrong password”', 'the server’s words second');
    await page.fill('input[name=password]', PASSWORD);
    await page.click('.login-form button[type=submit]');
    await page.locator('.dashboard').waitFor({ state: 'visible' });

    await page.waitForFunction(() => document.querySelector('img.qr')?.naturalWidth > 0, null, { timeout: 10_000 });
    assert.equal(await page.getAttribute('[data-testid=join-link]', 'href'), event.join_url);
    const qr = await page.evaluate(() => fetch(document.querySelector('img.qr').src).then(async (r) => ({ type: r.headers.get('content-type'), body: await r.text() })));
    assert.equal(qr.type, 'image/svg+xml');
    assert.match(qr.body, /<svg/);
    assert.equal((await f.server.call('GET', `/e/${event.slug}/qr.svg`)).status, 401, 'the QR code (it holds the join token) is the organiser’s');

    await page.uncheck('input[name=uploads_open]');
    await page.waitForFunction(() => document.querySelector('.settings > .note').textContent.length > 0);
    assert.equal((await f.server.call('GET', `/api/v1/events/${event.slug}`)).body.uploads_open, false);
    await page.check('input[name=uploads_open]');
    const eventNow = async () => (await f.server.call('GET', `/api/v1/events/${event.slug}`, { token: event.organiserToken })).body;
    await eventually(async () => (await eventNow()).uploads_open === true, { what: 'uploads open again' });

    await page.fill('input[name=guest_quota_photos]', '250');
    await page.click('.quota-form button[type=submit]');
    await eventually(async () => (await eventNow()).guest_quota_bytes === 250 * 4 * 1024 * 1024, { what: 'the new quota (in photos of 4 MB)' });

    await screenshot(page, 'organiser-390x844');
    const href = await page.getAttribute('a[data-action=download]', 'href');
    assert.equal(href, `/api/v1/events/${event.slug}/export.zip`);
    const zip = await page.evaluate((href) => fetch(href).then((r) => ({ status: r.status, type: r.headers.get('content-type') })), href);
    assert.equal(zip.status, 200);
    assert.match(zip.type || '', /zip/);

    await page.click('button[data-action=logout]');
    await page.locator('.login-form').waitFor({ state: 'visible' });
    const after = await page.evaluate((slug) => fetch(`/api/v1/events/${slug}`).then((r) => r.json()), event.slug);
    assert.equal(after.join_token, undefined, 'after logging out the page is no organiser’s any more');
    assert.deepEqual(problems, []);
  });
});

test('organiser: the live slideshow shows a guest’s new photo; hide and delete', { timeout: 90_000 }, async () => {
  const event = await f.server.createEvent({ name: 'Polterabend' });
  const guestContext = await phone(f.browser, { locale: 'de-DE' });
  const desk = await f.browser.newContext({ viewport: { width: 1280, height: 800 }, locale: 'de-DE' });
  try {
    const guest = await guestContext.newPage();
    await join(guest, event, 'Gast');
    await choose(guest, [f.photos[0]]);
    await waitForItems(guest, 1, 'done');

    const page = await desk.newPage();
    await page.goto(`${f.server.base}/e/${event.slug}/organiser`);
    await page.fill('input[name=password]', PASSWORD);
    await page.click('.login-form button[type=submit]');
    await page.locator('[data-testid=gallery] .tile').first().waitFor();
    await screenshot(page, 'organiser-desktop-1280x800');

    await page.click('button[data-action=slideshow]');
    await page.locator('[data-testid=slideshow]').waitFor({ state: 'visible' });
    // A photo that arrives now is shown next, fed by the live stream.
    await choose(guest, [f.photos[1]]);
    await waitForItems(guest, 2, 'done');
    // Once the server has made its preview, the live stream brings it to the screen.
    const newest = await eventually(async () => (await f.server.uploads(event)).find((u) => u.filename === 'organiser-2.jpg' && u.status === 'ready'), { timeout: 30_000, what: 'the new photo ready' });
    await page.waitForFunction(
      (id) => {
        const img = document.querySelector('[data-testid=slideshow] img');
        return img?.dataset.uploadId === id && img.complete && img.naturalWidth > 0;
      },
      newest.id,
      { timeout: 15_000 },
    );
    await screenshot(page, 'slideshow-1280x800');
    await page.keyboard.press('Escape');
    await page.locator('[data-testid=slideshow]').waitFor({ state: 'hidden' });

    // Hide the newest: other guests no longer see it; then delete the other one.
    await page.waitForFunction(() => document.querySelectorAll('[data-testid=gallery] .tile').length === 2);
    await page.locator('[data-testid=gallery] .tile-open').first().click();
    await page.click('dialog.lightbox[open] button[data-action=hide]');
    await page.waitForFunction(() => document.querySelector('[data-testid=gallery] .tile')?.dataset.status === 'hidden');
    await page.click('dialog.lightbox[open] button[data-action=close]');
    await page.locator('[data-testid=gallery] .tile-open').nth(1).click();
    await page.click('dialog.lightbox[open] button[data-action=delete]');
    await page.click('dialog.lightbox[open] [data-testid=confirm] button[data-action=confirm]');
    await page.waitForFunction(() => document.querySelectorAll('[data-testid=gallery] .tile').length === 1);
    const rows = await f.server.uploads(event);
    assert.equal(rows.length, 1);
    assert.equal(rows[0].status, 'hidden');
  } finally {
    await guestContext.close();
    await desk.close();
  }
});
