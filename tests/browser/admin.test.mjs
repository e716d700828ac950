// The instance admin's page: a wrong token is refused with a message, the right one lists the
// events; creating an event shows its join link, QR code and organiser page; uploads are
// closed; a new organiser password logs in on the organiser's page (and the old one no
// longer does); an event is deleted once its name is typed, and leaves the list.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN_TOKEN, backends, fixtures, onPhone, screenshot, startServer, watchConsole } from './helpers.mjs';

const f = fixtures({ server: false });
const MB = 1024 * 1024;

for (const backend of backends()) {
  test(`${backend}: admin page: log in, create an event, close uploads, new password, delete`, { timeout: 120_000 }, async () => {
    const server = await startServer({ backend, name: 'admin' });
    try {
      const older = await server.createEvent({ name: 'Sommerfest' });
      await onPhone(f.browser, { locale: 'en-GB' }, async (page, context) => {
        const problems = watchConsole(page);
        await page.goto(`${server.base}/admin`);
        assert.match(await page.textContent('[data-testid=token-hint]'), /admin_token/, 'the page says where the token is');
        await page.fill('input[name=admin_token]', 'not-the-admin-token');
        await page.click('[data-testid=admin-login] button[type=submit]');
        await page.locator('[data-testid=login-error]').waitFor();
        assert.match(await page.textContent('[data-testid=login-error]'), /not the admin token/);
        await screenshot(page, `admin-login-${backend}-390x844`);
        // An organiser's token is not the admin's either.
        await page.fill('input[name=admin_token]', older.organiserToken);
        await page.click('[data-testid=admin-login] button[type=submit]');
        await page.waitForFunction(() => document.querySelector('[data-testid=login-error]')?.textContent.includes('not the admin token'));
        assert.equal(await page.isVisible('.admin-dashboard'), false);

        await page.fill('input[name=admin_token]', ADMIN_TOKEN);
        await page.click('[data-testid=admin-login] button[type=submit]');
        await page.locator('.admin-dashboard').waitFor({ state: 'visible' });
        const olderCard = page.locator(`article[data-slug="${older.slug}"]`);
        await olderCard.waitFor();
        assert.match(await olderCard.locator('[data-testid=facts]').textContent(), /0 guests · 0 photos/);

        // Creating: the password rule shows before anything is sent.
        await page.fill('input[name=name]', 'Hochzeit Anna & Ben');
        await page.fill('input[name=organiser_password]', 'short');
        assert.equal(await page.textContent('.create-form [data-testid=password-rule]'), 'At least 8 characters (5 so far).');
        await page.click('.create-form button[type=submit]');
        await page.locator('.create-form .error').waitFor();
        assert.equal((await server.call('GET', '/api/v1/events', { token: ADMIN_TOKEN })).body.items.length, 1, 'nothing was sent');
        await page.fill('input[name=organiser_password]', 'long enough password');
        await page.fill('input[name=guest_quota_mb]', '200');
        await page.click('.create-form button[type=submit]');
        const link = page.locator('[data-testid=created] [data-testid=join-link]');
        await link.waitFor();
        const listed = (await server.call('GET', '/api/v1/events', { token: ADMIN_TOKEN })).body.items;
        const created = listed.find((e) => e.name === 'Hochzeit Anna & Ben');
        assert.ok(created, 'created on the server');
        assert.equal(created.guest_quota_bytes, 200 * MB);
        assert.equal(await link.getAttribute('href'), created.join_url);
        assert.equal(await page.getAttribute('[data-testid=created] [data-testid=organiser-link]', 'href'), `/e/${created.slug}/organiser`);
        await page.waitForFunction(() => document.querySelector('[data-testid=created] img.qr')?.naturalWidth > 0, null, { timeout: 10_000 });
        const card = page.locator(`article[data-slug="${created.slug}"]`);
        await card.waitFor();
        await screenshot(page, `admin-created-${backend}-390x844`);

        // Closing uploads.
        await card.locator('input[name=uploads_open]').uncheck();
        await card.locator('[data-testid=status][data-open=false]').waitFor();
        assert.equal((await server.call('GET', `/api/v1/events/${created.slug}`)).body.uploads_open, false);

        // The join link and QR code again, for an older event.
        await olderCard.locator('button[data-action=share]').click();
        await page.waitForFunction((slug) => document.querySelector(`article[data-slug="${slug}"] img.qr`)?.naturalWidth > 0, older.slug, { timeout: 10_000 });
        assert.equal(await olderCard.locator('[data-testid=join-link]').getAttribute('href'), older.join_url);
        await olderCard.locator('[data-testid=share]').scrollIntoViewIfNeeded();
        await screenshot(page, `admin-share-${backend}-390x844`);

        // A new organiser password: it logs in on the organiser's page, the old one does not.
        await card.locator('button[data-action=reset-password]').click();
        await card.locator('input[name=new_password]').fill('brand new password');
        await card.locator('[data-testid=password-form] button[type=submit]').click();
        await card.locator('.note', { hasText: 'New password set' }).waitFor();
        const old = await server.call('POST', `/api/v1/events/${created.slug}/organiser-sessions`, { body: { password: 'long enough password' } });
        assert.equal(old.status, 401);
        const organiser = await context.newPage();
        await organiser.goto(`${server.base}/e/${created.slug}/organiser`);
        await organiser.fill('input[name=password]', 'brand new password');
        await organiser.click('.login-form button[type=submit]');
        await organiser.locator('.dashboard').waitFor({ state: 'visible' });
        await organiser.close();
        // The older event's organiser session (from before) was not touched.
        assert.equal((await server.call('GET', `/api/v1/events/${older.slug}/uploads`, { token: older.organiserToken })).status, 200);

        // Deleting, once the name is typed.
        await olderCard.locator('button[data-action=delete-event]').click();
        const confirm = olderCard.locator('[data-testid=confirm] button[data-action=confirm]');
        assert.equal(await confirm.isDisabled(), true);
        await olderCard.locator('input[name=confirm_name]').fill('Sommer');
        assert.equal(await confirm.isDisabled(), true, 'not until the whole name is typed');
        await olderCard.locator('input[name=confirm_name]').fill('Sommerfest');
        assert.equal(await confirm.isDisabled(), false);
        await screenshot(page, `admin-delete-${backend}-390x844`);
        await confirm.click();
        await olderCard.waitFor({ state: 'detached' });
        assert.equal((await server.call('GET', `/api/v1/events/${older.slug}`)).status, 404);
        const after = (await server.call('GET', '/api/v1/events', { token: ADMIN_TOKEN })).body.items.map((e) => e.slug);
        assert.deepEqual(after, [created.slug]);

        // The token lasts for the tab: a reload stays logged in; logging out forgets it.
        await page.reload();
        await card.waitFor();
        assert.equal(await page.locator(`article[data-slug="${older.slug}"]`).count(), 0);
        await page.click('button[data-action=logout]');
        await page.locator('[data-testid=admin-login]').waitFor({ state: 'visible' });
        await page.reload();
        await page.locator('[data-testid=admin-login]').waitFor({ state: 'visible' });
        assert.equal(await page.isVisible('.admin-dashboard'), false);
        assert.deepEqual(problems, []);
      });
    } finally {
      await server.stop();
    }
  });
}
