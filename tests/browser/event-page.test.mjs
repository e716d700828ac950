// The guests' page as the organiser shapes it, on a phone: the welcome text (shown as typed,
// never as HTML) and the cover set on the dashboard, the lightbox without Save while guest
// downloads are off, and an upload window that opens while the page is open.

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fixtures, onPhone, startServer, join, choose, waitForItems, screenshot, watchConsole, eventually, backends, PASSWORD, unfold } from './helpers.mjs';

const f = fixtures({ server: false, photos: 2, photoOptions: { prefix: 'eventpage', width: 1200, height: 800 } });

// One server per backend, shared by its tests.
const servers = new Map();
async function serverFor(backend) {
  if (!servers.has(backend)) servers.set(backend, await startServer({ backend, name: 'event-page' }));
  return servers.get(backend);
}
after(async () => {
  for (const server of servers.values()) await server.stop();
});

/** A guest who joined through the API and uploaded `file`; waits until its thumb and preview exist. */
async function guestWithPhoto(server, event, name, file) {
  const joined = await server.call('POST', `/api/v1/events/${event.slug}/guests`, { body: { join_token: event.join_token, display_name: name } });
  assert.equal(joined.status, 201);
  const form = new FormData();
  form.append('client_upload_id', crypto.randomUUID());
  form.append('file', new Blob([fs.readFileSync(file)], { type: 'image/jpeg' }), path.basename(file));
  const r = await fetch(`${server.base}/api/v1/events/${event.slug}/uploads`, { method: 'POST', headers: { Authorization: `Bearer ${joined.body.token}` }, body: form });
  assert.equal(r.status, 201);
  const upload = await r.json();
  await eventually(async () => (await server.call('GET', `/api/v1/uploads/${upload.id}`, { token: joined.body.token })).body.status === 'ready', { what: 'the photo ready' });
  return { token: joined.body.token, upload };
}

const WELCOME = 'Schön, dass ihr da seid!\nBitte teilt eure <b>schönsten</b> Fotos.';

for (const backend of backends()) {
  test(`${backend}: the organiser sets the welcome text and the cover on the dashboard; guests see them, the text as typed`, { timeout: 120_000 }, async () => {
    const server = await serverFor(backend);
    const event = await server.createEvent({ name: 'Sommerfest' });
    const { upload } = await guestWithPhoto(server, event, 'Anna', f.photos[0]);
    const { upload: second } = await guestWithPhoto(server, event, 'Bea', f.photos[1]);

    await onPhone(f.browser, {}, async (page) => {
      const problems = watchConsole(page);
      await page.goto(`${server.base}/e/${event.slug}/organiser`);
      await page.locator('input[name=password]').fill(PASSWORD);
      await page.locator('form.login-form button[type=submit]').click();
      const card = page.locator('[data-testid=guest-page-card]');
      await card.waitFor({ state: 'visible' });
      assert.equal(await page.locator('#welcome_text').isVisible(), false, 'the card starts folded to its heading');
      await unfold(card);
      await page.locator('#welcome_text').fill(WELCOME);
      await page.locator('[data-action=save-welcome]').click();
      await page.waitForFunction(() => document.querySelector('[data-testid=page-note]')?.textContent === 'Gespeichert.');
      // "Set as cover" is in the photo's lightbox (tiles carry no buttons of their own).
      await page.locator(`.tile[data-upload-id="${upload.id}"] .tile-open`).click();
      await page.locator('dialog.lightbox[open] [data-action=set-cover]').click();
      await page.locator(`.tile[data-upload-id="${upload.id}"] [data-testid=cover-mark]`).waitFor({ state: 'attached' });
      await page.keyboard.press('Escape');
      await page.locator(`.tile[data-upload-id="${upload.id}"] [data-testid=cover-mark]`).waitFor();
      await page.waitForFunction(() => document.querySelector('[data-testid=cover-setting] img')?.naturalWidth > 0);
      assert.ok(await page.locator('[data-action=remove-cover]').isVisible(), 'the cover can be removed');
      await page.locator(`.tile[data-upload-id="${second.id}"]`).scrollIntoViewIfNeeded();
      await screenshot(page, `event-page-tiles-${backend}-390x844`);
      await card.scrollIntoViewIfNeeded();
      await screenshot(page, `event-page-dashboard-${backend}-390x844`);
      assert.deepEqual(problems, []);
    });
    const shown = (await server.call('GET', `/api/v1/events/${event.slug}`)).body;
    assert.equal(shown.welcome_text, WELCOME);
    assert.equal(shown.cover_url, `/api/v1/events/${event.slug}/cover`);

    await onPhone(f.browser, {}, async (page) => {
      const problems = watchConsole(page);
      // Before joining: the join page greets with both.
      await page.goto(event.join_url);
      const welcome = page.locator('[data-testid=welcome-text]');
      await welcome.waitFor({ state: 'visible' });
      assert.equal(await welcome.textContent(), WELCOME, 'the text as typed, markup included');
      assert.equal(await page.locator('[data-testid=welcome-text] b').count(), 0, 'never HTML');
      assert.match(await welcome.innerText(), /da seid!\nBitte/, 'the line break shows');
      // Shown once its load event has run (the size is known a moment earlier).
      await page.waitForFunction(() => {
        const img = document.querySelector('img[data-testid=cover]');
        return img?.naturalWidth > 0 && !img.hidden;
      }, null, { timeout: 15_000 });
      const cover = await page.locator('img[data-testid=cover]').boundingBox();
      assert.equal(Math.round(cover.width), 390, 'the cover spans the phone');
      assert.ok(cover.height >= 120 && cover.height <= 300, `a modest band (${cover.height}px)`);
      const name = await page.locator('#event-name').boundingBox();
      assert.ok(name.y + name.height <= cover.y + 1, 'the event’s name above it');
      await screenshot(page, `event-page-join-${backend}-390x844`);
      await join(page, event, 'Ben');
      assert.ok(await welcome.isVisible(), 'still there after joining');
      assert.deepEqual(problems, []);
    });
  });

  test(`${backend}: with guest downloads off the lightbox offers no Save for another guest's photo`, { timeout: 120_000 }, async () => {
    const server = await serverFor(backend);
    const event = await server.createEvent({ name: 'Ohne Download' });
    const { upload } = await guestWithPhoto(server, event, 'Anna', f.photos[0]);
    const off = await server.call('PATCH', `/api/v1/events/${event.slug}`, { token: event.organiserToken, body: { guest_downloads: false } });
    assert.equal(off.status, 200);

    await onPhone(f.browser, { locale: 'en-US' }, async (page) => {
      const problems = watchConsole(page);
      await join(page, event, 'Ben');
      await page.locator(`.tile[data-upload-id="${upload.id}"][data-picture=thumb] .tile-open`).click();
      await page.waitForFunction(() => document.querySelector('dialog.lightbox[open] .lightbox-img')?.naturalWidth > 0, null, { timeout: 15_000 });
      assert.equal(await page.locator('dialog.lightbox[open] a[data-action=download]').count(), 0, 'no Save');
      await screenshot(page, `event-page-no-download-${backend}-390x844`);
      await page.locator('dialog.lightbox[open] [data-action=close]').click();

      // Their own photo they may still save.
      await choose(page, [f.photos[1]]);
      await waitForItems(page, 1, 'done');
      const own = (await server.uploads(event)).find((u) => u.guest.display_name === 'Ben');
      await page.locator(`.tile[data-upload-id="${own.id}"] .tile-open`).click();
      await page.locator('dialog.lightbox[open] a[data-action=download]').waitFor({ state: 'visible' });
      assert.deepEqual(problems, []);
    });
  });

  test(`${backend}: before the upload window the button says when uploads open, and opens by itself`, { timeout: 120_000 }, async () => {
    const server = await serverFor(backend);
    const event = await server.createEvent({ name: 'Später' });
    const opens = Date.now() + 12_000;
    const until = opens + 6 * 3600_000;
    const set = await server.call('PATCH', `/api/v1/events/${event.slug}`, {
      token: event.organiserToken,
      body: { uploads_open_from: new Date(opens).toISOString(), uploads_open_until: new Date(until).toISOString() },
    });
    assert.equal(set.status, 200);

    await onPhone(f.browser, { locale: 'en-GB' }, async (page) => {
      const problems = watchConsole(page);
      await join(page, event, 'Carla');
      const pick = page.locator('[data-testid=pick]');
      const input = page.locator('input[type=file][multiple][accept^="image"]');
      assert.equal(Date.now() < opens, true, 'joined before the window opened');
      assert.equal(await pick.getAttribute('data-closed'), 'not_yet');
      assert.ok(await input.isDisabled(), 'no photos before it opens');
      const expected = new Date(opens).toLocaleString('en-GB', { weekday: 'short', day: 'numeric', month: 'short', hour: '2-digit', minute: '2-digit' });
      assert.match(await pick.textContent(), new RegExp(`Uploads open ${expected.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
      assert.match(await page.textContent('[data-testid=upload-window]'), /^Uploads open .+ – .+$/);
      await screenshot(page, `event-page-not-yet-${backend}-390x844`);

      // It opens at the time, without a reload.
      await page.waitForFunction(() => !document.querySelector('input[type=file][multiple]').disabled, null, { timeout: 30_000 });
      assert.ok(Date.now() >= opens, 'not before the time');
      assert.equal(await pick.getAttribute('data-closed'), '');
      await choose(page, [f.photos[1]]);
      await waitForItems(page, 1, 'done');
      assert.deepEqual(problems, []);
    });
  });
}
