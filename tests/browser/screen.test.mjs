// The venue's screen: the organiser makes a screen link on the dashboard; the screen (another
// browser, no organiser login) opens it, the token leaves the address bar, and it runs the live
// slideshow of what guests see — a photo waiting for review never shows, an approved one arrives
// live — keeps the screen awake and goes full screen in one tap. It may not change anything.
// Revoked on the dashboard, the screen stops and says so. Both databases.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PASSWORD, backends, desktop, eventually, fixtures, guestOf, onPhone, screenshot, startServer, unfold, uploadPhoto, watchConsole } from './helpers.mjs';

const f = fixtures({ server: false, photos: 3, photoOptions: { width: 640, height: 480 } });

async function login(page, server, slug) {
  await page.goto(`${server.base}/e/${slug}/organiser`);
  await page.fill('input[name=password]', PASSWORD);
  await page.click('.login-form button[type=submit]');
  await page.locator('.dashboard').waitFor({ state: 'visible' });
}

for (const backend of backends()) {
  test(`${backend}: a screen link runs the live slideshow of what guests see, awake, full screen, until revoked`, { timeout: 150_000 }, async () => {
    const server = await startServer({ backend, name: 'screen' });
    try {
      const event = await server.createEvent({ name: 'Sommerfest am See' });
      const organiser = { token: event.organiserToken };
      assert.equal((await server.call('PATCH', `/api/v1/events/${event.slug}`, { ...organiser, body: { review_uploads: true } })).status, 200);
      const anna = await guestOf(server, event, 'Anna');
      const approved = await uploadPhoto(server, event, anna, f.photos[0]);
      const waiting = await uploadPhoto(server, event, anna, f.photos[1]);
      assert.equal((await server.call('PATCH', `/api/v1/uploads/${approved}`, { ...organiser, body: { approved: true } })).status, 200);

      await onPhone(f.browser, { locale: 'de-DE' }, async (phonePage) => {
        const problems = watchConsole(phonePage);
        await login(phonePage, server, event.slug);
        const card = phonePage.locator('[data-testid=screen-link-card]');
        await unfold(card);
        assert.equal(await card.locator('[data-testid=screen-state]').textContent(), 'Noch kein Bildschirm-Link.');
        await card.locator('button[data-action=make-screen-link]').click();
        await card.locator('[data-testid=screen-url]').waitFor({ state: 'visible' });
        const url = await card.locator('[data-testid=screen-url]').inputValue();
        assert.match(url, new RegExp(`^${server.base}/e/${event.slug}/screen#s_`));
        await card.scrollIntoViewIfNeeded();
        await screenshot(phonePage, `screen-card-${backend}-390x844`);

        // The screen: a laptop at the venue, nobody logged in there.
        const context = await desktop(f.browser, { locale: 'de-DE' });
        try {
          await context.grantPermissions(['screen-wake-lock'], { origin: server.base }).catch(() => {});
          const screen = await context.newPage();
          const screenProblems = watchConsole(screen);
          await screen.goto(url);
          const show = screen.locator('[data-testid=slideshow]');
          await show.waitFor({ state: 'visible' });
          assert.equal(new URL(screen.url()).hash, '', 'the token left the address bar');
          await screen.waitForFunction((id) => document.querySelector('[data-testid=slideshow]')?.dataset.current === id, approved, { timeout: 15_000 });
          assert.equal(await screen.textContent('[data-testid=slide-event]'), 'Sommerfest am See');
          await screen.waitForFunction(() => document.querySelector('[data-testid=slide-qr]')?.naturalWidth > 0, null, { timeout: 10_000 });
          // Awake: the page holds a screen wake lock (this browser grants it).
          await screen.waitForFunction(() => ['held', 'refused'].includes(document.body.dataset.wakeLock));
          assert.equal(await screen.evaluate(() => document.body.dataset.wakeLock), 'held');
          await screen.waitForTimeout(1500); // the cross-fade
          await screenshot(screen, `screen-slideshow-${backend}-1280x800`);
          // The same link on a phone-sized screen (a tablet on the buffet, say).
          await onPhone(f.browser, { locale: 'en-GB' }, async (small) => {
            await small.goto(url);
            await small.waitForFunction((id) => document.querySelector('[data-testid=slideshow]')?.dataset.current === id, approved, { timeout: 15_000 });
            await small.waitForTimeout(1500);
            assert.equal(await small.textContent('button[data-action=full-screen]'), 'Full screen');
            await screenshot(small, `screen-slideshow-${backend}-390x844`);
          });

          // One tap: full screen.
          const full = screen.locator('button[data-action=full-screen]');
          assert.equal(await full.textContent(), 'Vollbild');
          await full.click();
          await screen.waitForFunction(() => Boolean(document.fullscreenElement));
          await full.waitFor({ state: 'hidden' });

          // A new approved photo arrives live; the waiting one never shows.
          const fresh = await uploadPhoto(server, event, anna, f.photos[2]);
          assert.equal((await server.call('PATCH', `/api/v1/uploads/${fresh}`, { ...organiser, body: { approved: true } })).status, 200);
          await screen.waitForFunction((id) => document.querySelector('[data-testid=slideshow]')?.dataset.shown.split(' ').includes(id), fresh, { timeout: 20_000 });
          assert.ok(!(await show.getAttribute('data-shown')).split(' ').includes(waiting), 'a photo waiting for review is not shown');

          // No organiser rights on this laptop.
          const tries = await screen.evaluate(async (slug) => {
            const send = (method, path, body) => fetch(path, { method, headers: { 'Content-Type': 'application/json', 'Idempotency-Key': crypto.getRandomValues(new Uint32Array(2)).join('-') }, body: body && JSON.stringify(body) }).then((r) => r.status);
            return {
              rename: await send('PATCH', `/api/v1/events/${slug}`, { name: 'Taken over' }),
              zip: await send('GET', `/api/v1/events/${slug}/export.zip`),
              link: await send('POST', `/api/v1/events/${slug}/screen-link`),
            };
          }, event.slug);
          assert.deepEqual(tries, { rename: 403, zip: 403, link: 403 });
          assert.equal((await server.call('GET', `/api/v1/events/${event.slug}`)).body.name, 'Sommerfest am See');

          // Revoked on the dashboard: the screen stops at the next news and says why.
          await screen.evaluate(() => document.exitFullscreen());
          await card.locator('button[data-action=revoke-screen-link]').click();
          await card.locator('[data-testid=screen-state]', { hasText: 'Noch kein Bildschirm-Link.' }).waitFor();
          await uploadPhoto(server, event, anna, f.photos[0]);
          const late = (await server.uploads(event)).find((u) => u.review === 'pending' && u.id !== waiting);
          await server.call('PATCH', `/api/v1/uploads/${late.id}`, { ...organiser, body: { approved: true } });
          await screen.locator('[data-testid=screen-notice]').waitFor({ state: 'visible', timeout: 20_000 });
          assert.equal(await show.isVisible(), false);
          assert.equal(await screen.textContent('[data-testid=screen-notice] h2'), 'Dieser Bildschirm zeigt nichts mehr');
          await screenshot(screen, `screen-revoked-${backend}-1280x800`);
          assert.deepEqual(screenProblems, []);
        } finally {
          await context.close();
        }
        assert.deepEqual(problems, []);
      });
    } finally {
      await server.stop();
    }
  });
}
