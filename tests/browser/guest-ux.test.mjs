// What the guest reads around the queue: one summary line for all photos (counts, the time
// left once a rate is measured, finished photos folded into it, the list expandable), the
// storage as a number of photos, the picker when uploads are closed, and a link without its
// join token saying what is missing instead of showing a form that cannot succeed.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fixtures, onPhone, makePhotos, join, choose, waitForItems, screenshot, fileSize, watchConsole } from './helpers.mjs';

const f = fixtures({ server: 'guest-ux', photos: 1, photoOptions: { width: 400, height: 300 } });

const visibleItems = (page) => page.$$eval('[data-client-upload-id]', (els) => els.filter((e) => e.checkVisibility()).length);

test('the summary line: counts, time left once there is a rate, finished photos folded, the list expandable', { timeout: 90_000 }, async () => {
  const event = await f.server.createEvent();
  const photos = await makePhotos(f.browser, 8, { prefix: 'summary', width: 1000, height: 750, noise: true });
  const bytes = photos.reduce((s, p) => s + fileSize(p), 0);
  await onPhone(f.browser, { locale: 'en-US' }, async (page, context) => {
    const problems = watchConsole(page);
    await join(page, event, 'Many Photos');
    const cdp = await context.newCDPSession(page);
    await cdp.send('Network.enable');
    // About 10 s for all eight: long enough to measure a rate and show what is left.
    await cdp.send('Network.emulateNetworkConditions', { offline: false, latency: 20, downloadThroughput: -1, uploadThroughput: Math.ceil(bytes / 10) });
    await choose(page, photos);
    const summary = page.locator('[data-testid=queue-summary]');
    await summary.waitFor();
    assert.match(await summary.textContent(), /^0 of 8 sent/);
    assert.equal(await summary.getAttribute('data-eta-s'), '', 'no estimate before there is a rate');
    await page.waitForFunction(() => /about \d+ min left|less than a minute left/.test(document.querySelector('[data-testid=queue-summary]').textContent), null, { timeout: 20_000 });
    assert.match(await summary.textContent(), /^\d of 8 sent · (about \d+ min|less than a minute) left/);
    // Collapsed: two being sent and the next three waiting show; the rest are in the line.
    assert.ok((await visibleItems(page)) <= 5, 'not every item is listed');
    const toggle = summary.locator('button[data-action=toggle-queue]');
    assert.equal(await toggle.textContent(), 'Show all (8)');
    await page.evaluate(() => window.scrollTo(0, 0));
    await screenshot(page, 'queue-summary-390x844');
    await cdp.send('Network.emulateNetworkConditions', { offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: -1 });

    await waitForItems(page, 8, 'done', 30_000);
    await page.waitForFunction(() => document.querySelector('[data-testid=queue-summary]').dataset.sent === '8');
    assert.equal(await summary.textContent(), 'All 8 photos sentShow all (8)');
    assert.equal(await visibleItems(page), 0, 'finished photos fold into the line');
    await toggle.click();
    assert.equal(await toggle.getAttribute('aria-expanded'), 'true');
    assert.equal(await visibleItems(page), 8, 'expanded: every item');
    assert.equal(await toggle.textContent(), 'Show less');
    await toggle.click();
    assert.equal(await visibleItems(page), 0);

    // German: the same line in the other language.
    await page.locator('#lang').click();
    assert.match(await summary.textContent(), /^Alle 8 Fotos gesendetAlle zeigen \(8\)$/);
    assert.deepEqual(problems, []);
  });
});

test('offline: a calm banner, photos queued and waiting, no button to press; all sent once back online', { timeout: 60_000 }, async () => {
  const event = await f.server.createEvent();
  const photos = await makePhotos(f.browser, 3, { prefix: 'calm', width: 400, height: 300 });
  await onPhone(f.browser, { locale: 'en-US' }, async (page, context) => {
    await join(page, event, 'No Signal');
    await context.setOffline(true);
    await choose(page, photos);
    await waitForItems(page, 3, 'queued');
    await page.waitForTimeout(2500);
    assert.equal(await page.locator('[data-upload-state=failed]').count(), 0, 'nothing looks failed');
    const banner = page.locator('[data-testid=waiting]');
    assert.equal(await banner.textContent(), 'Waiting for the connection — your photos are safe on this phone and are sent by themselves.');
    assert.equal(await page.locator('button[data-action=retry]:visible').count(), 0, 'no retry button');
    assert.equal(await page.locator('[data-client-upload-id] .q-msg:visible').first().textContent(), 'Waits for the connection.');
    assert.match(await page.locator('[data-testid=queue-summary]').textContent(), /^0 of 3 sent · waiting for the connection/);
    assert.doesNotMatch(await page.locator('.uploader').textContent(), /again in \d|Not sent/);
    await page.evaluate(() => window.scrollTo(0, 0));
    await screenshot(page, 'offline-390x844');

    await context.setOffline(false);
    await waitForItems(page, 3, 'done');
    await banner.waitFor({ state: 'hidden', timeout: 2_000 });
    assert.equal((await f.server.uploads(event)).length, 3);
  });
});

test('a link without its join token says what is missing, and shows no form', { timeout: 30_000 }, async () => {
  const event = await f.server.createEvent();
  for (const [locale, text] of [
    ['en-US', 'This link is incomplete — scan the QR code again or ask the hosts for the full link.'],
    ['de-DE', 'Dieser Link ist unvollständig – scanne den QR-Code noch einmal oder frag die Gastgeber nach dem vollständigen Link.'],
  ]) {
    await onPhone(f.browser, { locale }, async (page) => {
      await page.goto(`${f.server.base}/e/${event.slug}`);
      const msg = page.locator('[data-testid=link-incomplete]');
      await msg.waitFor();
      assert.equal(await msg.textContent(), text);
      assert.equal(await page.locator('input[name=display_name]').isVisible(), false, 'no form that cannot succeed');
      assert.equal(await page.locator('form[data-testid=join] button').isVisible(), false);
      if (locale === 'en-US') await screenshot(page, 'link-incomplete-390x844');

      // The full link works on the same phone.
      await join(page, event, 'Late Guest');
      assert.equal(await msg.isVisible(), false);
    });
  }
});

test('uploads closed: the picker says so before a photo is chosen (disabled, with the reason)', { timeout: 30_000 }, async () => {
  const event = await f.server.createEvent();
  await f.server.call('PATCH', `/api/v1/events/${event.slug}`, { token: event.organiserToken, body: { uploads_open: false } });
  await onPhone(f.browser, { locale: 'en-US' }, async (page) => {
    await join(page, event, 'Too Late');
    const pick = page.locator('[data-testid=pick]');
    assert.match(await pick.textContent(), /Uploads are closed$/);
    assert.equal(await pick.getAttribute('aria-disabled'), 'true');
    assert.ok(await page.locator('input[type=file]').isDisabled(), 'no photo can be chosen');
    assert.equal(await page.locator('#pick-hint').textContent(), 'The hosts have closed uploads for now. Photos already sent stay in the gallery.');
    await page.evaluate(() => window.scrollTo(0, 0));
    await screenshot(page, 'uploads-closed-390x844');
    await page.locator('#lang').click();
    assert.match(await pick.textContent(), /Uploads sind geschlossen$/);
  });
});

test('storage in photos: about how many more fit, from the guest’s own average once known; the exact figure below', { timeout: 60_000 }, async () => {
  const MiB = 1024 * 1024;
  const event = await f.server.createEvent({ quota: 100 * MiB });
  await onPhone(f.browser, { locale: 'en-US' }, async (page) => {
    await join(page, event, 'Counter');
    const quota = page.locator('[data-testid=quota]');
    // Nothing uploaded yet: a phone photo of ~4 MB is the measure.
    assert.equal(await quota.locator('.quota-photos').textContent(), 'You can add about 25 more photos.');
    assert.equal(await quota.locator('.quota-exact').textContent(), '0 B of 100 MB used · 100 MB left');

    await choose(page, [f.photos[0]]);
    await waitForItems(page, 1, 'done');
    const size = fileSize(f.photos[0]);
    await page.waitForFunction((size) => document.querySelector('[data-testid=quota]').dataset.usedBytes === String(size), size);
    // Now the guest's own photos are the measure.
    const n = Math.floor((100 * MiB - size) / size);
    const rough = n >= 1000 ? Math.round(n / 100) * 100 : n >= 100 ? Math.round(n / 10) * 10 : n;
    assert.equal(await quota.locator('.quota-photos').textContent(), `You can add about ${rough.toLocaleString('en')} more photos.`);
    assert.match(await quota.locator('.quota-exact').textContent(), /KB of 100 MB used · 100 MB left/);
    await page.locator('#lang').click();
    assert.equal(await quota.locator('.quota-photos').textContent(), `Du kannst noch etwa ${rough.toLocaleString('de')} Fotos hinzufügen.`);
    assert.match(await quota.locator('.quota-exact').textContent(), / von 100 MB belegt · noch 100 MB frei$/);
  });
});
