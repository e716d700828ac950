// Guests' words: a caption typed in the upload queue while the photo waits survives a reload and
// arrives with the photo; a guestbook message written on the guest's page waits for the hosts'
// approval (review gate), is approved on the dashboard, and then shows on the guest's page of
// another guest, in the organiser's slideshow and on the venue's screen. Phone and desktop screenshots of each. Both databases.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PASSWORD, backends, choose, desktop, eventually, fixtures, join, makePhotos, onPhone, screenshot, startServer, waitForItems, watchConsole } from './helpers.mjs';

const f = fixtures({ server: false });

for (const backend of backends()) {
  test(`${backend}: a caption typed while the photo waits survives a reload and arrives with it`, { timeout: 120_000 }, async () => {
    const server = await startServer({ backend, name: `captions-${backend}` });
    const photos = await makePhotos(f.browser, 3, { prefix: `captions-${backend}`, width: 640, height: 480 });
    try {
      const event = await server.createEvent({ name: 'Gartenfest' });
      await onPhone(f.browser, { locale: 'de-DE' }, async (page) => {
        const problems = watchConsole(page);
        await join(page, event, 'Oma Inge');
        // Uploads hang: two photos are sending (the queue's two slots), the third waits its turn.
        const held = [];
        const hold = (route) => (route.request().method() === 'POST' ? held.push(route) : route.continue());
        await page.route('**/api/v1/events/*/uploads', hold);
        await choose(page, photos);
        await waitForItems(page, 2, 'uploading');
        const [waiting] = await waitForItems(page, 1, 'queued');
        const row = page.locator(`[data-client-upload-id="${waiting}"]`);
        const field = row.locator('input[data-testid=caption]');
        await field.waitFor({ state: 'visible' });
        // The rows that are sending already keep their caption as it was (none): no field there.
        assert.equal(await page.locator('[data-upload-state=uploading] input[data-testid=caption]:visible').count(), 0);
        await field.fill('Oma und die Torte 🎂');
        await screenshot(page, `captions-${backend}-phone-typed`);
        await field.press('Enter');
        // Kept with the queue item in IndexedDB: a reload (the held requests die with it) keeps it.
        await page.waitForTimeout(500);
        await page.reload();
        await page.locator(`[data-client-upload-id="${waiting}"]`).waitFor();
        await eventually(async () => (await page.locator(`[data-client-upload-id="${waiting}"] input[data-testid=caption]`).inputValue()) === 'Oma und die Torte 🎂', { what: 'the caption after the reload' });
        // Let everything through.
        await page.unroute('**/api/v1/events/*/uploads', hold);
        for (const route of held.splice(0)) route.continue().catch(() => {});
        await waitForItems(page, 3, 'done', 60_000);
        const captions = await eventually(async () => {
          const list = await server.call('GET', `/api/v1/events/${event.slug}/uploads?limit=10`, { token: event.organiserToken });
          return list.body.items.length === 3 ? list.body.items.map((u) => [u.client_upload_id, u.caption]) : null;
        }, { what: 'three uploads' });
        const byKey = Object.fromEntries(captions);
        assert.equal(byKey[waiting], 'Oma und die Torte 🎂', 'the caption arrived with its photo');
        assert.equal(captions.filter(([, c]) => c).length, 1, 'the others have none');
        assert.deepEqual(problems.filter((p) => !/Failed to load resource|net::ERR/.test(p)), []);
      });
    } finally {
      await server.stop();
    }
  });

  test(`${backend}: a guestbook message waits for approval, then shows on the page and in the slideshow`, { timeout: 150_000 }, async () => {
    const server = await startServer({ backend, name: `guestbook-${backend}` });
    const [photo] = await makePhotos(f.browser, 1, { prefix: `guestbook-${backend}`, width: 640, height: 480 });
    try {
      const event = await server.createEvent({ name: 'Hochzeit Anna & Ben' });
      await server.call('PATCH', `/api/v1/events/${event.slug}`, { token: event.organiserToken, body: { review_uploads: true } });
      const hostContext = await desktop(f.browser, { locale: 'en-GB' });
      try {
        const host = await hostContext.newPage();
        await host.goto(`${server.base}/e/${event.slug}/organiser`);
        await host.fill('input[name=password]', PASSWORD);
        await host.click('.login-form button[type=submit]');
        await host.locator('[data-testid=guestbook-card]').waitFor();

        await onPhone(f.browser, { locale: 'de-DE' }, async (page) => {
          const problems = watchConsole(page);
          await join(page, event, 'Tante Erna');
          await choose(page, [photo]);
          await waitForItems(page, 1, 'done');
          await page.fill('textarea[name=guestbook_text]', 'Alles Liebe euch beiden!\nEure Erna');
          await page.click('button[data-action=guestbook-send]');
          const own = page.locator('[data-testid=guestbook] .guestbook-item');
          await own.first().waitFor();
          assert.equal(await own.first().getAttribute('data-review'), 'pending');
          assert.match(await own.first().textContent(), /Freigabe/);
          await page.locator('section.guestbook').scrollIntoViewIfNeeded();
          await screenshot(page, `guestbook-${backend}-phone-waiting`);
          assert.deepEqual(problems.filter((p) => !/Failed to load resource/.test(p)), []);
        });

        // The hosts approve it on the dashboard (it arrived there live); the photo too.
        const item = host.locator('[data-testid=guestbook-card] .guestbook-item');
        await item.first().waitFor({ timeout: 15_000 });
        await host.locator('[data-testid=guestbook-card]').scrollIntoViewIfNeeded();
        await screenshot(host, `guestbook-${backend}-desktop-dashboard`);
        await host.click('[data-testid=guestbook-card] button[data-action=guestbook-approve]');
        await eventually(async () => (await item.first().getAttribute('data-review')) === 'approved', { what: 'approved on the dashboard' });
        const waitingPhotos = await server.call('GET', `/api/v1/events/${event.slug}/uploads?review=pending`, { token: event.organiserToken });
        for (const u of waitingPhotos.body.items) await server.call('PATCH', `/api/v1/uploads/${u.id}`, { token: event.organiserToken, body: { approved: true } });
        await host.locator('[data-testid=gallery] .tile').first().waitFor();

        // Another guest reads it on the page.
        await onPhone(f.browser, { locale: 'de-DE' }, async (page) => {
          await join(page, event, 'Onkel Paul');
          const entry = page.locator('[data-testid=guestbook] .guestbook-item');
          await entry.first().waitFor();
          assert.match(await entry.first().textContent(), /Alles Liebe euch beiden!/);
          await page.locator('section.guestbook').scrollIntoViewIfNeeded();
          await screenshot(page, `guestbook-${backend}-phone-list`);
        });

        // The slideshow shows it between the photos.
        await host.click('button[data-action=slideshow]');
        const slide = host.locator('[data-testid=slide-message]');
        await slide.waitFor({ state: 'visible', timeout: 30_000 });
        assert.equal(await host.locator('[data-testid=slide-message-text]').textContent(), 'Alles Liebe euch beiden!\nEure Erna');
        assert.equal(await host.locator('[data-testid=slide-message-by]').textContent(), '— Tante Erna');
        await screenshot(host, `guestbook-${backend}-desktop-slideshow`);

        // So does the venue's screen, which holds no organiser rights.
        const link = await server.call('POST', `/api/v1/events/${event.slug}/screen-link`, { token: event.organiserToken });
        assert.equal(link.status, 201);
        const screen = await hostContext.newPage();
        await screen.goto(link.body.url);
        await screen.locator('[data-testid=slide-message]').waitFor({ state: 'visible', timeout: 40_000 });
        assert.equal(await screen.locator('[data-testid=slide-message-by]').textContent(), '— Tante Erna');
      } finally {
        await hostContext.close();
      }
    } finally {
      await server.stop();
    }
  });
}
