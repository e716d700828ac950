// Failures as the guest sees them. A temporary one (no answer, the server busy) is waited out
// calmly: the photo stays `queued`, a banner says the photos are safe, no button to press, and
// it goes by itself with the same key. Only when the next automatic try is far off does
// "Send now" appear (and send at once). A refusal for good (uploads closed, quota full, not an
// image) shows the server's own words and a Remove button, never "Send now", and no broken
// thumbnail.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fixtures, onPhone, join, choose, waitForItems, sleep, fileSize, screenshot, watchConsole } from './helpers.mjs';

const f = fixtures({ server: 'failures', photos: 4 });

function countPosts(page, slug) {
  const posts = [];
  page.on('request', (r) => {
    if (r.method() === 'POST' && r.url().endsWith(`/events/${slug}/uploads`)) posts.push(r.headers()['idempotency-key']);
  });
  return posts;
}

/** The problem+json bodies the server answered to upload POSTs. */
function refusals(page, slug) {
  const bodies = [];
  page.on('response', async (r) => {
    if (r.request().method() === 'POST' && r.url().endsWith(`/events/${slug}/uploads`) && r.status() >= 400) bodies.push(await r.json().catch(() => null));
  });
  return bodies;
}

test('no answer: the photo waits calmly (banner, queued, no button) and goes by itself with the same key', { timeout: 60_000 }, async () => {
  const event = await f.server.createEvent();
  await onPhone(f.browser, { locale: 'de-DE' }, async (page) => {
    await join(page, event, 'Trauzeuge');
    const posts = countPosts(page, event.slug);
    let cut = true;
    await page.route(`${f.server.base}/api/v1/events/${event.slug}/uploads`, (route) => (route.request().method() === 'POST' && cut ? route.abort('connectionreset') : route.continue()));
    await choose(page, [f.photos[0]]);
    await page.waitForFunction(() => document.querySelector('[data-testid=waiting]')?.hidden === false);
    while (posts.length < 2) await sleep(100);
    const [key] = await waitForItems(page, 1, 'queued');
    const item = page.locator(`[data-client-upload-id="${key}"]`);
    assert.equal(await item.getAttribute('data-error'), 'network');
    assert.equal(await item.locator('button[data-action=retry]').isVisible(), false, 'no button while the wait is short');
    assert.match(await page.locator('[data-testid=waiting]').textContent(), /Warte auf die Verbindung – deine Fotos sind auf diesem Handy sicher/);
    assert.doesNotMatch(await item.textContent(), /\d+ s\b|Nicht gesendet/, 'no countdown, no "not sent"');

    cut = false;
    await waitForItems(page, 1, 'done', 15_000);
    assert.ok(posts.length >= 3 && posts.every((k) => k === key), 'every attempt carried the same key');
    // The banner goes with the trouble.
    await page.locator('[data-testid=waiting]').waitFor({ state: 'hidden', timeout: 2_000 });
    assert.deepEqual((await f.server.uploads(event)).map((r) => r.client_upload_id), [key]);
  });
});

test('the server asks for a long wait: "Send now" appears and sends at once with the same key', { timeout: 60_000 }, async () => {
  const event = await f.server.createEvent();
  await onPhone(f.browser, { locale: 'de-DE' }, async (page) => {
    await join(page, event, 'Trauzeugin');
    const posts = countPosts(page, event.slug);
    const url = `${f.server.base}/api/v1/events/${event.slug}/uploads`;
    const busy = (route) => route.fulfill({ status: 503, contentType: 'application/problem+json', headers: { 'Retry-After': '120' }, body: JSON.stringify({ status: 503, code: 'unavailable', detail: 'busy' }) });
    await page.route(url, (route) => (route.request().method() === 'POST' ? busy(route) : route.continue()));
    await choose(page, [f.photos[1]]);
    const [key] = await waitForItems(page, 1, 'failed');
    const item = page.locator(`[data-client-upload-id="${key}"]`);
    assert.equal(await item.getAttribute('data-final'), 'false');
    const retry = item.locator('button[data-action=retry]');
    assert.equal(await retry.textContent(), 'Jetzt senden');
    assert.match(await item.locator('.q-msg').textContent(), /Nächster Versuch von selbst in etwa 2 Min\./);
    assert.equal(await item.locator('button[data-action=remove]').isVisible(), false, 'temporary: nothing to remove');
    await page.unrouteAll({ behavior: 'ignoreErrors' });
    await retry.click();
    await waitForItems(page, 1, 'done', 5_000);
    assert.ok(posts.length === 2 && posts.every((k) => k === key), 'one more try, with the same key');
    assert.deepEqual((await f.server.uploads(event)).map((r) => r.client_upload_id), [key]);
  });
});

test('uploads closed: the server’s words and Remove, no "Send now"; the picker says so; reopened, the photo goes by itself', { timeout: 60_000 }, async () => {
  const event = await f.server.createEvent();
  await onPhone(f.browser, { locale: 'en-US' }, async (page) => {
    await join(page, event, 'Bridesmaid');
    await f.server.call('PATCH', `/api/v1/events/${event.slug}`, { token: event.organiserToken, body: { uploads_open: false } });
    const posts = countPosts(page, event.slug);
    const bodies = refusals(page, event.slug);
    await choose(page, [f.photos[1]]);
    const [key] = await waitForItems(page, 1, 'failed');
    const item = page.locator(`[data-client-upload-id="${key}"]`);
    assert.equal(await item.getAttribute('data-final'), 'true');
    assert.match(await item.locator('.q-msg').textContent(), /Uploads are closed/);
    assert.equal(bodies[0]?.code, 'uploads_closed');
    assert.equal(await item.locator('.q-detail').textContent(), `The server says: “${bodies[0].detail}”`);
    assert.equal(await item.locator('button[data-action=retry]').isVisible(), false, 'no "Send now"');
    assert.ok(await item.locator('button[data-action=remove]').isVisible());
    assert.ok(await item.locator('img.q-thumb').isVisible(), 'the local preview, not a broken image');
    // The refusal told the page: the picker says so before another photo is chosen.
    assert.match(await page.locator('[data-testid=pick]').textContent(), /^\+?Uploads are closed$/);
    assert.ok(await page.locator('input[type=file]').isDisabled());
    await sleep(3000);
    assert.equal(posts.length, 1, 'not retried by itself while closed');

    // The hosts open uploads again; the page finds out when the guest comes back to it.
    await f.server.call('PATCH', `/api/v1/events/${event.slug}`, { token: event.organiserToken, body: { uploads_open: true } });
    await page.evaluate(() => document.dispatchEvent(new Event('visibilitychange')));
    await waitForItems(page, 1, 'done', 10_000);
    assert.equal(posts.length, 2);
    assert.ok(await page.locator('input[type=file]').isEnabled());
    assert.match(await page.locator('[data-testid=pick]').textContent(), /Upload photos & videos$/);
    assert.equal((await f.server.uploads(event)).length, 1);
  });
});

test('quota exceeded: what is left, the server’s words, Remove (no "Send now"), and nothing is retried', { timeout: 60_000 }, async () => {
  const small = fileSize(f.photos[2]);
  const big = fileSize(f.photos[3]);
  // Room for the first photo and a bit, not for the second.
  const quota = small + Math.floor(big / 2);
  const event = await f.server.createEvent({ quota });
  await onPhone(f.browser, { locale: 'en-US' }, async (page) => {
    await join(page, event, 'Best man');
    const posts = countPosts(page, event.slug);
    const bodies = refusals(page, event.slug);
    await choose(page, [f.photos[2]]);
    await waitForItems(page, 1, 'done');
    await choose(page, [f.photos[3]]);
    const [key] = await waitForItems(page, 1, 'failed');
    const item = page.locator(`[data-client-upload-id="${key}"]`);
    assert.equal(await item.getAttribute('data-error'), 'quota_exceeded');
    assert.equal(await item.getAttribute('data-final'), 'true');
    const msg = await item.locator('.q-msg').textContent();
    assert.match(msg, /storage is full/);
    assert.match(msg, /KB left/, `names what is left: ${msg}`);
    assert.match(await item.locator('.q-detail').textContent(), new RegExp(bodies[0].detail.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')));
    assert.equal(await item.locator('button[data-action=retry]').isVisible(), false);
    assert.equal(await item.locator('button[data-action=remove]').textContent(), 'Remove');
    assert.equal(await item.locator('.q-state').textContent(), 'Not accepted');
    await sleep(3000);
    assert.equal(posts.length, 2, 'no retry loop');
    assert.equal(await item.getAttribute('data-upload-state'), 'failed');
    assert.equal((await f.server.uploads(event)).length, 1);
    await page.evaluate(() => window.scrollTo(0, 0));
    await screenshot(page, 'refusal-quota-390x844');

    await item.locator('button[data-action=remove]').click();
    await page.waitForFunction((key) => !document.querySelector(`[data-client-upload-id="${key}"]`), key);
  });
});

test('not an image: the server’s words name the format (no list of the page’s own), a placeholder with the file name, no broken thumbnail', { timeout: 60_000 }, async () => {
  const event = await f.server.createEvent();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'confetti-notimage-'));
  const fake = path.join(dir, 'party-notes.jpg');
  fs.writeFileSync(fake, 'these are notes, not a photo\n'.repeat(40));
  await onPhone(f.browser, { locale: 'de-DE' }, async (page) => {
    const problems = watchConsole(page);
    await join(page, event, 'Cousine');
    const bodies = refusals(page, event.slug);
    await choose(page, [fake]);
    const [key] = await waitForItems(page, 1, 'failed');
    const item = page.locator(`[data-client-upload-id="${key}"]`);
    assert.equal(await item.getAttribute('data-error'), 'unsupported_media_type');
    assert.equal(await item.getAttribute('data-final'), 'true');
    assert.equal(await item.locator('.q-msg').textContent(), 'Diese Datei kann der Server nicht als Foto annehmen.');
    assert.ok(bodies[0]?.detail, 'the server gave a detail');
    assert.equal(await item.locator('.q-detail').textContent(), `Der Server sagt: „${bodies[0].detail}“`);
    assert.match(bodies[0].detail, /HEIC/, 'the server names what it takes');
    assert.match(await page.locator('input[type=file]').getAttribute('accept'), /^image\/\*,.*\.heic.*image\/heic/);
    assert.equal(await item.locator('img.q-thumb').count(), 0, 'no broken image');
    assert.equal(await item.locator('.q-placeholder').textContent(), 'party-notes.jpg');
    assert.equal(await item.locator('button[data-action=retry]').isVisible(), false);
    assert.equal(await item.locator('button[data-action=remove]').textContent(), 'Entfernen');
    await page.evaluate(() => window.scrollTo(0, 0));
    await screenshot(page, 'refusal-not-an-image-390x844');
    await item.locator('button[data-action=remove]').click();
    await page.waitForFunction((key) => !document.querySelector(`[data-client-upload-id="${key}"]`), key);
    // Gone from IndexedDB too: a reload does not bring it back.
    await page.reload();
    await page.locator('.uploader').waitFor({ state: 'visible' });
    await sleep(500);
    assert.equal(await page.locator(`[data-client-upload-id="${key}"]`).count(), 0);
    assert.deepEqual(problems, []);
  });
});
