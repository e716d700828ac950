// On a plain http:// LAN address the page is not a secure context: no crypto.randomUUID, no
// service worker, no Background Sync, no Screen Wake Lock. The guest page must work there all
// the same, and say nothing about what is missing. A host name that Chromium maps to 127.0.0.1
// makes such an origin without leaving this machine.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { launchBrowser, startServer, makePhotos, phone, join, choose, waitForItems, watchConsole } from './helpers.mjs';

test('the guest page uploads from a non-secure http:// origin', { timeout: 60_000 }, async () => {
  const browser = await launchBrowser(['--host-resolver-rules=MAP wedding.lan 127.0.0.1']);
  const server = await startServer({ name: 'insecure-context' });
  try {
    const port = new URL(server.base).port;
    const event = await server.createEvent();
    const lanEvent = { ...event, join_url: event.join_url.replace('127.0.0.1', 'wedding.lan') };
    assert.match(lanEvent.join_url, new RegExp(`^http://wedding\\.lan:${port}/e/`));
    const photos = await makePhotos(browser, 2, { prefix: 'lan' });
    const context = await phone(browser);
    try {
      const page = await context.newPage();
      const problems = watchConsole(page);
      const notes = [];
      page.on('console', (m) => notes.push(`${m.type()}: ${m.text()}`));
      await join(page, lanEvent, 'Gast im WLAN');
      assert.deepEqual(await page.evaluate(() => [window.isSecureContext, typeof crypto.randomUUID]), [false, 'undefined']);
      await choose(page, photos);
      const keys = await waitForItems(page, 2, 'done');
      assert.ok(keys.every((k) => /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/.test(k)), `version 4 UUIDs: ${keys}`);
      assert.equal((await server.uploads(event)).length, 2);
      // No worker, no switch for the screen, no offer to install, and not a word about them.
      assert.equal(await page.evaluate(() => 'serviceWorker' in navigator), false);
      assert.equal(await page.locator('[data-testid=keep-awake]').count(), 0);
      assert.equal(await page.locator('[data-testid=install-offer]').count(), 0);
      assert.deepEqual(problems, []);
      assert.deepEqual(notes.filter((n) => /worker|sync|wake/i.test(n)), []);
    } finally {
      await context.close();
    }
  } finally {
    await browser.close();
    await server.stop();
  }
});
