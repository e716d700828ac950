// The guest's page installed (issue: the page, installed): in a secure context (127.0.0.1 is
// one) the page registers its service worker, which keeps the page's files so the event's page
// opens with the server away and shows the queue; the event's manifest makes it installable,
// with a share target whose arrivals land in the same queue; and the worker sends the queue
// with every tab of the event closed when a Background Sync fires (here through the DevTools
// protocol, as the browser does when the connection returns).
//
// "The server away" is a proxy in front of it that resets every connection (helpers
// `startProxy().unreachable`): the page's origin is the proxy's, as a phone's is the venue's
// address.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium } from 'playwright-core';
import { launchBrowser, startServer, startProxy, makePhotos, phone, join, CHROMIUM_ARGS, choose, waitForItems, states, screenshot, watchConsole, eventually, backends, sleep } from './helpers.mjs';

/** A server behind a proxy that can make it unreachable, and an event on it. */
async function venue(name, backend = 'sqlite') {
  const proxy = await startProxy();
  const server = await startServer({ backend, name, env: { CONFETTI_PUBLIC_URL: proxy.base } });
  proxy.target(new URL(server.base).port);
  const event = await server.createEvent({ name: 'Lena & Tom' });
  return {
    proxy,
    server,
    event,
    async close() {
      await server.stop();
      await proxy.close();
    },
  };
}

/** Waits until the service worker controls the page (installed, its files kept). */
async function controlled(page) {
  await page.waitForFunction(() => Boolean(navigator.serviceWorker?.controller), null, { timeout: 20_000 });
}

/** Rows of the queue that carry `data-error` = `code`. */
/**
 * Rows that met the unreachable server: tried and waiting (`code`), or still waiting for the
 * server's answer whether it has their bytes already (a pick asks before it sends: re-picks).
 */
function rowsWithError(page, code) {
  return page.$$eval(`[data-client-upload-id][data-error="${code}"], [data-client-upload-id][data-check="ask"]`, (els) => els.length);
}

/** The queue's keys as IndexedDB keeps them. */
function queuedKeys(page) {
  return page.evaluate(
    () =>
      new Promise((resolve, reject) => {
        const req = indexedDB.open('confetti');
        req.onsuccess = () => {
          const all = req.result.transaction('queue').objectStore('queue').getAll();
          all.onsuccess = () => resolve(all.result.map((i) => i.client_upload_id));
          all.onerror = () => reject(all.error);
        };
        req.onerror = () => reject(req.error);
      }),
  );
}

/** A venue, a browser, two photos and a phone-sized page watched for console errors, for `run`. */
async function onVenuePhone(name, prefix, run) {
  const browser = await launchBrowser();
  const v = await venue(name);
  try {
    const photos = await makePhotos(browser, 2, { prefix });
    const context = await phone(browser, { locale: 'en-GB' });
    const page = await context.newPage();
    const problems = watchConsole(page);
    await run({ v, photos, context, page, problems });
    await context.close();
  } finally {
    await browser.close();
    await v.close();
  }
}

test('the installed page opens with the server away and shows the queue from the phone', { timeout: 120_000 }, async () => {
  await onVenuePhone('installed-offline', 'sw-offline', async ({ v, photos, context, page, problems }) => {
  await join(page, v.event, 'Mia');
  await controlled(page);

  // Installable: Chromium reads the event's manifest and finds nothing missing.
  const cdp = await context.newCDPSession(page);
  const manifest = await cdp.send('Page.getAppManifest');
  assert.deepEqual(manifest.errors, [], 'the manifest parses');
  assert.equal(JSON.parse(manifest.data).name, 'Lena & Tom');
  const { installabilityErrors } = await cdp.send('Page.getInstallabilityErrors');
  // (A test browser's contexts are incognito ones, which Chromium never installs from.)
  assert.deepEqual(installabilityErrors.filter((e) => e.errorId !== 'in-incognito'), [], 'the page is installable');

  // One visit through the worker keeps the event's own page (its name, who the guest is).
  await page.reload();
  await page.locator('.uploader').waitFor({ state: 'visible' });

  v.proxy.unreachable(true);
  await choose(page, photos);
  await eventually(async () => (await rowsWithError(page, 'network')) === 2, { what: 'both photos tried and waiting' });
  const keys = (await queuedKeys(page)).sort();
  assert.equal(keys.length, 2);

  await page.reload();
  await page.locator('#event-name').filter({ hasText: 'Lena & Tom' }).waitFor({ timeout: 10_000 });
  const shown = await states(page);
  assert.deepEqual(shown.map((s) => s.key).sort(), keys, 'the same photos, under the same keys, from the phone');
  assert.ok(shown.every((s) => s.state === 'queued' || s.state === 'uploading' || (s.state === 'failed' && s.error === 'network')), JSON.stringify(shown));
  await screenshot(page, 'installed-offline');
  assert.equal((await v.server.uploads(v.event)).length, 0);

  v.proxy.unreachable(false);
  await waitForItems(page, 2, 'done', 90_000);
  assert.equal((await v.server.uploads(v.event)).length, 2, 'each photo stored once');
  assert.deepEqual(problems, []);
  });
});

test('a page kept from before the guest joined, opened with the server away, shows the queue and not the name form', { timeout: 120_000 }, async () => {
  await onVenuePhone('installed-kept-before-joining', 'sw-kept', async ({ v, photos, context, page, problems }) => {
  // The link opened twice before joining: the worker keeps the page that says "not joined".
  await page.goto(v.event.join_url);
  await controlled(page);
  await page.goto(v.event.join_url);
  await page.locator('form.join-form button:not([disabled])').waitFor({ state: 'visible' });
  await page.locator('input[name=display_name]').fill('Ida');
  await page.locator('form[data-testid=join] button[type=submit]').click();
  await page.locator('.uploader').waitFor({ state: 'visible' });

  v.proxy.unreachable(true);
  await choose(page, photos);
  await eventually(async () => (await rowsWithError(page, 'network')) === 2, { what: 'both photos waiting' });
  await page.reload();
  await page.locator('[data-client-upload-id]').first().waitFor({ state: 'visible', timeout: 15_000 });
  assert.equal(await page.locator('form.join-form').isVisible(), false, 'no name form for a guest who joined on this phone');
  assert.equal((await states(page)).length, 2, 'the queue, from the phone');

  v.proxy.unreachable(false);
  await waitForItems(page, 2, 'done', 90_000);
  assert.equal((await v.server.uploads(v.event)).length, 2, 'each photo stored once');
  assert.deepEqual(problems, []);
  });
});

test("the event's page offers to install itself, with the event's name", { timeout: 120_000 }, async () => {
  const v = await venue('installed-offer');
  // A profile of its own (a test browser's usual contexts are incognito, where Chromium installs
  // nothing); the flag skips Chromium's wait for the guest to have used the page a while.
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'confetti-profile-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: [...CHROMIUM_ARGS, '--bypass-app-banner-engagement-checks'],
    viewport: { width: 390, height: 844 },
    deviceScaleFactor: 2,
    isMobile: true,
    hasTouch: true,
    locale: 'de-DE',
  });
  try {
    const page = context.pages()[0] || (await context.newPage());
    const problems = watchConsole(page);
    await join(page, v.event, 'Mia');
    await controlled(page);
    const cdp = await context.newCDPSession(page);
    assert.deepEqual((await cdp.send('Page.getInstallabilityErrors')).installabilityErrors, [], 'installable');
    await page.reload();
    const offer = page.locator('[data-testid=install-offer]');
    await offer.waitFor({ state: 'visible', timeout: 15_000 });
    assert.match(await offer.textContent(), /Als App installieren/);
    await page.locator('#event-name').filter({ hasText: 'Lena & Tom' }).waitFor();
    await offer.scrollIntoViewIfNeeded();
    await screenshot(page, 'installed-install-offer');
    assert.deepEqual(problems, []);
  } finally {
    await context.close();
    fs.rmSync(profile, { recursive: true, force: true });
    await v.close();
  }
});

test('photos shared into the event land in its queue under new keys and are stored once', { timeout: 120_000 }, async () => {
  const browser = await launchBrowser();
  const v = await venue('installed-share');
  try {
    const picked = await makePhotos(browser, 1, { prefix: 'sw-picked' });
    const shared = await makePhotos(browser, 3, { prefix: 'sw-shared' });
    const context = await phone(browser, { locale: 'de-DE' });
    const page = await context.newPage();
    await join(page, v.event, 'Jonas');
    await controlled(page);
    // The app was opened once since it was installed: the worker keeps the event's page.
    await page.reload();
    await page.locator('.uploader').waitFor({ state: 'visible' });
    await choose(page, picked);
    const [pickedKey] = await waitForItems(page, 1, 'done');

    // As Android hands a share to an installed web app: a POST of the files to the manifest's
    // share_target action, in a navigation. The server is away, so the arrival can be seen.
    v.proxy.unreachable(true);
    await page.evaluate((slug) => {
      const form = document.createElement('form');
      form.method = 'post';
      form.enctype = 'multipart/form-data';
      form.action = `/e/${slug}/share`;
      const input = document.createElement('input');
      input.type = 'file';
      input.name = 'files';
      input.multiple = true;
      form.append(input);
      document.body.append(form);
    }, v.event.slug);
    await page.locator('form[action$="/share"] input[name=files]').setInputFiles(shared);
    const arrived = page.waitForURL(new RegExp(`/e/${v.event.slug}$`));
    await page.locator('form[action$="/share"]').evaluate((form) => form.submit());
    await arrived;
    await eventually(async () => (await states(page)).length === 3, { what: 'the shared photos in the queue' });
    const keys = (await states(page)).map((s) => s.key);
    assert.equal(new Set([...keys, pickedKey]).size, 4, 'new keys, one per shared file');
    await page.locator('.uploader').waitFor({ state: 'visible' });
    await screenshot(page, 'installed-share-arrival');

    v.proxy.unreachable(false);
    await waitForItems(page, 3, 'done', 90_000);
    const uploads = await v.server.uploads(v.event);
    assert.equal(uploads.length, 4, 'the picked photo and the three shared ones, each once');
    for (const file of shared) {
      const stored = uploads.filter((u) => u.filename === path.basename(file));
      assert.equal(stored.length, 1, `${path.basename(file)} once`);
      assert.equal(stored[0].bytes, fs.statSync(file).size, 'whole');
      assert.ok(keys.includes(stored[0].client_upload_id), 'under the key the worker gave it');
    }
    await context.close();
  } finally {
    await browser.close();
    await v.close();
  }
});

test('two tabs of the event send each photo once, its bytes once', { timeout: 120_000 }, async () => {
  const browser = await launchBrowser();
  const v = await venue('installed-two-tabs');
  try {
    const photos = await makePhotos(browser, 4, { prefix: 'sw-tabs', width: 1600, height: 1200, noise: true });
    const total = photos.reduce((sum, f) => sum + fs.statSync(f).size, 0);
    const context = await phone(browser, { locale: 'en-GB' });
    const first = await context.newPage();
    await join(first, v.event, 'Ida');
    await controlled(first);
    await first.reload();
    await first.locator('.uploader').waitFor({ state: 'visible' });
    v.proxy.unreachable(true);
    await choose(first, photos);
    await eventually(async () => (await rowsWithError(first, 'network')) === 4, { what: 'every photo tried and waiting' });
    // A second tab of the same event (from the worker's copy: the server is away) restores the
    // same queue and tries it too.
    const second = await context.newPage();
    await second.goto(`${v.proxy.base}/e/${v.event.slug}`);
    await eventually(async () => (await rowsWithError(second, 'network')) === 4, { what: 'the second tab trying the same photos' });

    const before = v.proxy.up;
    v.proxy.unreachable(false);
    await Promise.all([first.evaluate(() => window.dispatchEvent(new Event('online'))), second.evaluate(() => window.dispatchEvent(new Event('online')))]);
    await waitForItems(first, 4, 'done', 60_000).catch(() => null);
    await eventually(async () => (await v.server.uploads(v.event)).length === 4, { timeout: 60_000, what: 'four stored' });
    await waitForItems(second, 4, 'done', 60_000);
    const sent = v.proxy.up - before;
    console.log(`two tabs: ${sent} bytes towards the server for ${total} bytes of photos`);
    assert.ok(sent < total * 1.3, `each photo's bytes sent once: ${sent} for ${total}`);
    assert.equal((await v.server.uploads(v.event)).length, 4, 'each photo stored once');
    await context.close();
  } finally {
    await browser.close();
    await v.close();
  }
});

for (const backend of backends()) {
  test(`[${backend}] the service worker sends the queue with every tab of the event closed`, { timeout: 180_000 }, async () => {
    const browser = await launchBrowser();
    const v = await venue(`installed-sync-${backend}`, backend);
    try {
      const photos = await makePhotos(browser, 5, { prefix: `sw-sync-${backend}` });
      const context = await phone(browser, { locale: 'en-GB' });
      const page = await context.newPage();
      await join(page, v.event, 'Sam');
      await controlled(page);
      const cdp = await context.newCDPSession(page);
      const registration = new Promise((resolve) => {
        cdp.on('ServiceWorker.workerRegistrationUpdated', ({ registrations }) => {
          const live = registrations.find((r) => !r.isDeleted && r.scopeURL.endsWith('/e/'));
          if (live) resolve(live.registrationId);
        });
      });
      await cdp.send('ServiceWorker.enable');
      const registrationId = await registration;

      v.proxy.unreachable(true);
      await choose(page, photos);
      await eventually(async () => (await rowsWithError(page, 'network')) === 5, { what: 'every photo tried and waiting' });
      // While the page is open, the keep-the-screen-on switch is offered (a phone, a secure context).
      const awake = page.locator('[data-testid=keep-awake]');
      assert.ok(await awake.isVisible(), `the keep-awake switch shows while photos wait: ${await page.locator('.uploader').innerHTML()}`);
      await page.close();
      assert.equal(context.pages().length, 0, 'no tab open');
      // The sync the closing page asked for fires at once and finds the server away.
      await sleep(1500);
      assert.equal((await v.server.uploads(v.event)).length, 0);

      v.proxy.unreachable(false);
      // A blank tab (not the event's page: not a client of the worker) carries the DevTools session.
      const blank = await context.newPage();
      const devtools = await context.newCDPSession(blank);
      await devtools.send('ServiceWorker.enable');
      const origin = v.proxy.base;
      const t0 = Date.now();
      await devtools.send('ServiceWorker.dispatchSyncEvent', { origin, registrationId, tag: `upload:${v.event.slug}`, lastChance: false });
      await eventually(async () => (await v.server.uploads(v.event)).length >= 5, { timeout: 60_000, interval: 50, what: 'all five stored' });
      const ms = Date.now() - t0;
      console.log(`[${backend}] sync fired → last of 5 photos stored, page closed: ${ms} ms`);
      fs.appendFileSync(path.join('output', 'installed-sync.txt'), `${backend} ${ms} ms\n`);

      // Nothing more arrives, and the page, opened again, has nothing left to send.
      await sleep(1500);
      const uploads = await v.server.uploads(v.event);
      assert.equal(uploads.length, 5, 'each photo stored once');
      const again = await context.newPage();
      await again.goto(`${v.proxy.base}/e/${v.event.slug}`);
      await again.locator('.uploader').waitFor({ state: 'visible' });
      await sleep(1000);
      assert.deepEqual((await states(again)).filter((s) => s.state !== 'done'), [], 'the queue is empty');
      assert.equal((await v.server.uploads(v.event)).length, 5);
      await context.close();
    } finally {
      await browser.close();
      await v.close();
    }
  });
}
