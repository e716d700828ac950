// Failures the guest can see and act on: a network failure shows the retry button, which sends
// at once; a final refusal (uploads closed, quota full) names the reason, is not retried by
// itself, and the retry button sends it again when the guest asks.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fixtures, onPhone, join, choose, waitForItems, sleep, fileSize, screenshot } from './helpers.mjs';

const f = fixtures({ server: 'failures', photos: 4 });

function countPosts(page, slug) {
  const posts = [];
  page.on('request', (r) => {
    if (r.method() === 'POST' && r.url().endsWith(`/events/${slug}/uploads`)) posts.push(r.headers()['idempotency-key']);
  });
  return posts;
}

test('a network failure shows the retry button, which sends again with the same key', { timeout: 60_000 }, async () => {
  const event = await f.server.createEvent();
  await onPhone(f.browser, { locale: 'de-DE' }, async (page) => {
    await join(page, event, 'Trauzeuge');
    const posts = countPosts(page, event.slug);
    const url = `${f.server.base}/api/v1/events/${event.slug}/uploads`;
    await page.route(url, (route) => (route.request().method() === 'POST' ? route.abort('connectionreset') : route.continue()));
    await choose(page, [f.photos[0]]);
    const [key] = await waitForItems(page, 1, 'failed');
    const retry = page.locator(`[data-client-upload-id="${key}"] button[data-action=retry]`);
    assert.equal(await retry.textContent(), 'Erneut senden');
    await page.unrouteAll({ behavior: 'ignoreErrors' });
    await retry.click();
    await waitForItems(page, 1, 'done', 5_000);
    assert.ok(posts.length >= 2 && posts.every((k) => k === key), 'every attempt carried the same key');
    assert.deepEqual((await f.server.uploads(event)).map((r) => r.client_upload_id), [key]);
  });
});

test('uploads closed: the item says so, is not retried by itself, and the retry button sends it', { timeout: 60_000 }, async () => {
  const event = await f.server.createEvent();
  await onPhone(f.browser, { locale: 'en-US' }, async (page) => {
    await join(page, event, 'Bridesmaid');
    await f.server.call('PATCH', `/api/v1/events/${event.slug}`, { token: event.organiserToken, body: { uploads_open: false } });
    const posts = countPosts(page, event.slug);
    await choose(page, [f.photos[1]]);
    const [key] = await waitForItems(page, 1, 'failed');
    const item = page.locator(`[data-client-upload-id="${key}"]`);
    assert.match(await item.locator('.q-msg').textContent(), /Uploads are closed/);
    await sleep(4000);
    assert.equal(posts.length, 1, 'not retried by itself');
    assert.equal(await item.getAttribute('data-upload-state'), 'failed');

    await f.server.call('PATCH', `/api/v1/events/${event.slug}`, { token: event.organiserToken, body: { uploads_open: true } });
    await item.locator('button[data-action=retry]').click();
    await waitForItems(page, 1, 'done', 10_000);
    assert.equal(posts.length, 2);
    assert.equal((await f.server.uploads(event)).length, 1);
  });
});

test('quota exceeded: the message says how much is left, and nothing is retried', { timeout: 60_000 }, async () => {
  const small = fileSize(f.photos[2]);
  const big = fileSize(f.photos[3]);
  // Room for the first photo and a bit, not for the second.
  const quota = small + Math.floor(big / 2);
  const event = await f.server.createEvent({ quota });
  await onPhone(f.browser, { locale: 'en-US' }, async (page) => {
    await join(page, event, 'Best man');
    const posts = countPosts(page, event.slug);
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
    await sleep(4000);
    assert.equal(posts.length, 2, 'no retry loop');
    assert.equal(await item.getAttribute('data-upload-state'), 'failed');
    const rows = await f.server.uploads(event);
    assert.equal(rows.length, 1);
    await screenshot(page, 'quota-exceeded-390x844');
  });
});
