// Hosts hear of photos waiting for review while the dashboard is open: the tab's title and a
// badge at the top count them, live — up as guests send photos, down as a co-host approves one
// elsewhere — and the badge opens the review view. Both databases.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PASSWORD, backends, desktop, fixtures, guestOf, screenshot, startServer, uploadPhoto, watchConsole } from './helpers.mjs';

const f = fixtures({ server: false, photos: 2, photoOptions: { width: 480, height: 360 } });

for (const backend of backends()) {
  test(`${backend}: the dashboard's title and badge count the photos waiting for review, live`, { timeout: 90_000 }, async () => {
    const server = await startServer({ backend, name: 'waiting' });
    try {
      const event = await server.createEvent({ name: 'Gartenfest' });
      await server.call('PATCH', `/api/v1/events/${event.slug}`, { token: event.organiserToken, body: { review_uploads: true } });
      const anna = await guestOf(server, event, 'Anna');
      for (const [size, locale, words] of [[{ width: 390, height: 844 }, 'en-GB', ['1 photo waits for approval', '2 photos wait for approval']], [{ width: 1280, height: 800 }, 'de-DE', ['1 Foto wartet auf Freigabe', '2 Fotos warten auf Freigabe']]]) {
        const context = size.width > 500 ? await desktop(f.browser, { locale }) : await f.browser.newContext({ viewport: size, isMobile: true, hasTouch: true, deviceScaleFactor: 2, locale });
        try {
          // Whatever waits from the run before is approved first: start from none.
          for (const u of (await server.uploads(event)).filter((u) => u.review === 'pending')) await server.call('PATCH', `/api/v1/uploads/${u.id}`, { token: event.organiserToken, body: { approved: true } });
          const page = await context.newPage();
          const problems = watchConsole(page);
          await page.goto(`${server.base}/e/${event.slug}/organiser`);
          await page.fill('input[name=password]', PASSWORD);
          await page.click('.login-form button[type=submit]');
          await page.locator('.dashboard').waitFor({ state: 'visible' });
          const badge = page.locator('[data-testid=waiting-badge]');
          await page.locator('[data-testid=pending]').waitFor({ state: 'visible' });
          assert.equal(await badge.isVisible(), false);
          assert.equal(await page.title(), 'Gartenfest · Confetti');

          const first = await uploadPhoto(server, event, anna, f.photos[0]);
          await page.waitForFunction(() => document.title === '(1) Gartenfest · Confetti', null, { timeout: 20_000 });
          assert.equal(await badge.textContent(), words[0]);
          await uploadPhoto(server, event, anna, f.photos[1]);
          await page.waitForFunction(() => document.title === '(2) Gartenfest · Confetti', null, { timeout: 20_000 });
          assert.equal(await badge.textContent(), words[1]);
          await screenshot(page, `waiting-badge-${backend}-${size.width}x${size.height}`);

          // A co-host approves one from elsewhere: the count goes down by itself.
          assert.equal((await server.call('PATCH', `/api/v1/uploads/${first}`, { token: event.organiserToken, body: { approved: true } })).status, 200);
          await page.waitForFunction(() => document.title === '(1) Gartenfest · Confetti', null, { timeout: 20_000 });
          assert.equal(await badge.textContent(), words[0]);
          // The badge opens the review view on the photo that waits.
          await badge.click();
          await page.locator('[data-testid=review]').waitFor({ state: 'visible', timeout: 5_000 });
          assert.equal(await page.locator('[data-testid=review-position]').textContent(), locale === 'de-DE' ? 'Foto 1 von 1' : 'Photo 1 of 1');
          assert.deepEqual(problems, []);
        } finally {
          await context.close();
        }
      }
    } finally {
      await server.stop();
    }
  });
}
