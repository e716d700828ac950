// The event's name: a fresh server's demo event asks its organiser for a name on the first
// visit (the form first on the dashboard, focused); once saved the name is on the page's
// heading, the guests' page and the table card, the question is gone and the name is one row
// of the settings. The admin renames any event from its card. Both databases.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN_TOKEN, PASSWORD, backends, desktop, eventually, fixtures, onPhone, screenshot, startServer, watchConsole } from './helpers.mjs';

const f = fixtures({ server: false });

async function login(page, server, slug) {
  await page.goto(`${server.base}/e/${slug}/organiser`);
  await page.fill('input[name=password]', PASSWORD);
  await page.click('.login-form button[type=submit]');
  await page.locator('.dashboard').waitFor({ state: 'visible' });
}

const named = async (server, slug) => (await server.call('GET', '/api/v1/events', { token: ADMIN_TOKEN })).body.items.find((e) => e.slug === slug);

for (const backend of backends()) {
  test(`${backend}: the demo event asks for a name; organiser and admin rename it`, { timeout: 120_000 }, async () => {
    const server = await startServer({ backend, name: 'name', demo: true });
    try {
      const [demo] = (await server.call('GET', '/api/v1/events', { token: ADMIN_TOKEN })).body.items;
      assert.equal(demo.name, 'Demo event');
      assert.equal(demo.name_chosen, false);
      // The demo's password is printed in the server's log; the admin sets one the test knows.
      assert.equal((await server.call('POST', `/api/v1/events/${demo.slug}/organiser-password`, { token: ADMIN_TOKEN, body: { password: PASSWORD } })).status, 204);

      await onPhone(f.browser, { locale: 'de-DE' }, async (page) => {
        const problems = watchConsole(page);
        await login(page, server, demo.slug);
        const ask = page.locator('[data-testid=ask-name]');
        await ask.waitFor({ state: 'visible' });
        assert.equal(await ask.locator('h2').textContent(), 'Wie heißt euer Fest?');
        assert.equal(await page.evaluate(() => document.activeElement?.name), 'event_name', 'the name field has the focus');
        assert.equal(await page.inputValue('input[name=event_name]'), '', 'the made-up name is not offered');
        // The question stands above the join link.
        assert.ok(await page.evaluate(() => document.querySelector('[data-testid=ask-name]').compareDocumentPosition(document.querySelector('.share')) & Node.DOCUMENT_POSITION_FOLLOWING));
        await screenshot(page, `name-ask-${backend}-390x844`);

        // An empty name is not sent.
        await page.click('[data-action=save-name]');
        assert.equal(await page.textContent('[data-testid=name-note]'), 'Der Name braucht 1 bis 120 Zeichen.');
        assert.equal((await named(server, demo.slug)).name_chosen, false);

        await page.fill('input[name=event_name]', '  Hochzeit Anna & Ben ');
        await page.click('[data-action=save-name]');
        await page.waitForFunction(() => document.getElementById('event-name').textContent === 'Hochzeit Anna & Ben');
        assert.equal(await page.title(), 'Hochzeit Anna & Ben · Confetti');
        assert.equal(await ask.isVisible(), false, 'asked once');
        assert.equal(await page.locator('.settings [data-testid=name-form]').count(), 1, 'now a row of the settings');
        assert.equal(await page.inputValue('input[name=event_name]'), 'Hochzeit Anna & Ben');
        assert.equal(await page.textContent('.table-card-name'), 'Hochzeit Anna & Ben');
        const event = await named(server, demo.slug);
        assert.deepEqual([event.name, event.name_chosen, event.slug], ['Hochzeit Anna & Ben', true, demo.slug]);
        await page.locator('.settings').scrollIntoViewIfNeeded();
        await screenshot(page, `name-saved-${backend}-390x844`);

        // A reload does not ask again; the guests' page carries the name.
        await page.reload();
        await page.locator('.dashboard').waitFor({ state: 'visible' });
        assert.equal(await ask.isVisible(), false);
        const guest = await page.context().newPage();
        await guest.goto(demo.join_url);
        await guest.waitForFunction(() => document.getElementById('event-name').textContent === 'Hochzeit Anna & Ben');
        await guest.close();
        assert.deepEqual(problems, []);
      });

      // At a desk, in English: renamed again from the settings.
      const context = await desktop(f.browser, { locale: 'en-GB' });
      try {
        const page = await context.newPage();
        const problems = watchConsole(page);
        await login(page, server, demo.slug);
        assert.equal(await page.textContent('.settings .name-form label'), 'Event name');
        await page.fill('input[name=event_name]', 'Anna & Ben’s wedding');
        await page.click('[data-action=save-name]');
        await page.waitForFunction(() => document.querySelector('[data-testid=name-note]').textContent === 'Name saved.');
        assert.equal((await named(server, demo.slug)).name, 'Anna & Ben’s wedding');
        await screenshot(page, `name-organiser-${backend}-1280x800`);

        // The admin renames it from its card.
        await page.goto(`${server.base}/admin`);
        await page.fill('input[name=admin_token]', ADMIN_TOKEN);
        await page.click('[data-testid=admin-login] button[type=submit]');
        const card = page.locator(`article[data-slug="${demo.slug}"]`);
        await card.waitFor();
        await card.locator('button[data-action=rename]').click();
        const input = card.locator('input[name=event_name]');
        assert.equal(await input.inputValue(), 'Anna & Ben’s wedding');
        await input.fill('Sommerfest 2026');
        await screenshot(page, `name-admin-${backend}-1280x800`);
        await card.locator('[data-action=save-name]').click();
        await card.locator('.admin-event-name', { hasText: 'Sommerfest 2026' }).waitFor();
        assert.equal(await page.textContent(`article[data-slug="${demo.slug}"] > p.note`), 'Renamed to “Sommerfest 2026”.');
        await eventually(async () => (await named(server, demo.slug)).name === 'Sommerfest 2026', { what: 'the admin’s name' });
        assert.deepEqual(problems, []);
      } finally {
        await context.close();
      }

      await onPhone(f.browser, { locale: 'de-DE' }, async (page) => {
        await page.goto(`${server.base}/admin`);
        await page.fill('input[name=admin_token]', ADMIN_TOKEN);
        await page.click('[data-testid=admin-login] button[type=submit]');
        const card = page.locator(`article[data-slug="${demo.slug}"]`);
        await card.locator('button[data-action=rename]').click();
        assert.equal(await card.locator('.name-form label').textContent(), 'Name des Festes');
        await card.locator('.name-form').scrollIntoViewIfNeeded();
        await screenshot(page, `name-admin-${backend}-390x844`);
      });
    } finally {
      await server.stop();
    }
  });
}
