// The queue outlives the connection and the tab: photos chosen offline stay queued (in
// IndexedDB) and go out on the `online` event; a tab closed while offline sends them when it is
// opened again; an upload cut off by a reload is sent after the reload, once.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fixtures, onPhone, makePhotos, join, choose, waitForItems, states, sleep } from './helpers.mjs';

const f = fixtures({ server: 'offline', photos: 3 });

function queuedInIndexedDb(page) {
  return page.evaluate(
    () =>
      new Promise((resolve, reject) => {
        const req = indexedDB.open('confetti');
        req.onsuccess = () => {
          const all = req.result.transaction('queue').objectStore('queue').getAll();
          all.onsuccess = () => resolve(all.result.map((i) => ({ key: i.client_upload_id, state: i.state, size: i.blob?.size, name: i.name })));
          all.onerror = () => reject(all.error);
        };
        req.onerror = () => reject(req.error);
      }),
  );
}

test('offline: chosen photos stay queued, and are sent when the connection is back', { timeout: 60_000 }, async () => {
  const event = await f.server.createEvent();
  await onPhone(f.browser, {}, async (page, context) => {
    await join(page, event, 'Oma');
    await context.setOffline(true);
    await choose(page, f.photos.slice(0, 2));
    await waitForItems(page, 2, 'queued');
    await sleep(2000);
    assert.deepEqual((await states(page)).map((s) => s.state), ['queued', 'queued'], 'nothing sent while offline');
    const stored = await queuedInIndexedDb(page);
    assert.equal(stored.length, 2, 'both photos are in IndexedDB');
    assert.ok(stored.every((i) => i.size > 1000), 'with their bytes');
    assert.ok(await page.isVisible('.banner:not(.warn)'), 'the offline note shows');
    assert.equal((await f.server.uploads(event)).length, 0);

    await context.setOffline(false);
    await waitForItems(page, 2, 'done');
    assert.equal((await f.server.uploads(event)).length, 2);
    assert.equal((await queuedInIndexedDb(page)).length, 0, 'done items are pruned from IndexedDB');
  });
});

// Where the service worker sends such photos with the tab closed (installed.test.mjs), the
// page opened again finds nothing left; without one (no Background Sync, or http://) the page does it.
test('a tab closed while offline sends its photos when the page is opened again', { timeout: 60_000 }, async () => {
  const event = await f.server.createEvent();
  await onPhone(f.browser, { serviceWorkers: 'block' }, async (page, context) => {
    await join(page, event, 'Onkel Paul');
    await context.setOffline(true);
    await choose(page, [f.photos[2]]);
    const [key] = await waitForItems(page, 1, 'queued');
    await page.close();
    await context.setOffline(false);

    page = await context.newPage();
    await page.goto(`${f.server.base}/e/${event.slug}`);
    const keys = await waitForItems(page, 1, 'done');
    assert.deepEqual(keys, [key], 'the same queue item, with its key');
    const rows = await f.server.uploads(event);
    assert.deepEqual(rows.map((r) => r.client_upload_id), [key]);
  });
});

test('an upload cut off by a reload is sent after the reload, once', { timeout: 60_000 }, async () => {
  const event = await f.server.createEvent();
  const photos = await makePhotos(f.browser, 2, { prefix: 'reload', width: 2000, height: 1500, noise: true });
  await onPhone(f.browser, {}, async (page, context) => {
    await join(page, event, 'Lena');
    // A crawling connection: both photos are still on their way when the page reloads.
    const cdp = await context.newCDPSession(page);
    await cdp.send('Network.enable');
    await cdp.send('Network.emulateNetworkConditions', { offline: false, latency: 100, downloadThroughput: -1, uploadThroughput: 20_000 });
    await choose(page, photos);
    await waitForItems(page, 2, 'uploading');
    const before = (await states(page)).map((s) => s.key).sort();
    await sleep(500);

    const preflights = [];
    page.on('request', (r) => {
      if (r.url().includes('/uploads/by-client-id/')) preflights.push(r.url().split('/').pop());
    });
    // Still crawling when the reload cuts them off (unthrottled first, a busy machine could
    // finish one in between); full speed again for the page after the reload.
    await page.reload();
    await cdp.send('Network.emulateNetworkConditions', { offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: -1 });
    const keys = await waitForItems(page, 2, 'done');
    assert.deepEqual(keys.sort(), before, 'the same items, with their keys');
    assert.deepEqual(preflights.sort(), before, 'each asked the server before re-sending');
    const rows = await f.server.uploads(event);
    assert.deepEqual(rows.map((r) => r.client_upload_id).sort(), before, 'each stored once');
  });
});
