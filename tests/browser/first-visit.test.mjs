// A guest's first visit on a weak network: the join link's page carries the event, the server's
// limits and who the visitor is, so the name form shows after the page and its first files
// alone — no API request before it, and only the modules joining needs (the gallery's and the
// queue's come after). Joining then goes on as before, and a return visit of the joined guest
// opens the upload view, again without asking the API who they are first. Both databases.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { backends, fixtures, onPhone, screenshot, startServer, watchConsole } from './helpers.mjs';

const f = fixtures({ server: false });

/** The paths the page asked for until `locator` showed, in order. */
async function askedUntil(page, url, locator) {
  const asked = [];
  const record = (r) => asked.push(new URL(r.url()).pathname);
  page.on('request', record);
  await page.goto(url);
  await page.locator(locator).waitFor({ state: 'visible' });
  page.off('request', record);
  return asked;
}

for (const backend of backends()) {
  test(`${backend}: the name form needs the page and joining's modules, nothing from the API`, { timeout: 120_000 }, async () => {
    const server = await startServer({ backend, name: 'first-visit' });
    try {
      const event = await server.createEvent({ name: 'Sommerfest </script> am See' });
      await onPhone(f.browser, { locale: 'de-DE' }, async (page) => {
        const problems = watchConsole(page);
        // The queue's and the gallery's modules are held back until the form shows: the form
        // must not need them.
        let release;
        const held = new Promise((resolve) => {
          release = resolve;
        });
        await page.route(/\/(queue|gallery|lightbox|thumbhash|upload-view)\.js$/, async (route) => {
          await held;
          await route.continue();
        });
        const asked = await askedUntil(page, event.join_url, 'input[name=display_name]');
        release();
        assert.deepEqual(asked.filter((p) => p.startsWith('/api/')), [], `no API request before the form: ${asked.join(' ')}`);
        assert.equal(await page.textContent('#event-name'), 'Sommerfest </script> am See', 'the name as the organiser wrote it');
        assert.equal(await page.evaluate(() => document.activeElement?.name), 'display_name', 'the name field has the focus');
        await screenshot(page, `first-visit-form-${backend}-390x844`);

        // The guest types at once; the rest of the page arrives meanwhile.
        await page.fill('input[name=display_name]', 'Carla');
        await page.click('form.join-form button[type=submit]');
        await page.locator('.uploader').waitFor({ state: 'visible' });
        const me = await page.evaluate(async () => (await fetch('/api/v1/me')).json());
        assert.equal(me.display_name, 'Carla');

        // Back later: the page knows the guest; no `/api/v1/me` before the upload view shows.
        const again = await askedUntil(page, page.url(), '.uploader');
        assert.ok(!again.includes('/api/v1/me') && !again.includes('/api/v1/info'), `asked: ${again.join(' ')}`);
        assert.equal(await page.locator('form.join-form').isVisible(), false, 'no form for a joined guest');
        assert.deepEqual(problems, []);
      });
    } finally {
      await server.stop();
    }
  });
}

for (const backend of backends()) {
  test(`${backend}: a new visitor sees the name form before any of the page's files, and keeps what they typed`, { timeout: 120_000 }, async () => {
    const server = await startServer({ backend, name: 'first-visit-early' });
    try {
      const event = await server.createEvent({ name: 'Sommerfest am See' });
      await onPhone(f.browser, { locale: 'de-DE' }, async (page) => {
        const problems = watchConsole(page);
        // Every file of the page is held back: the form and its look come with the page alone.
        let release;
        const held = new Promise((resolve) => {
          release = resolve;
        });
        const asked = [];
        await page.route(/\/static\//, async (route) => {
          asked.push(new URL(route.request().url()).pathname);
          await held;
          await route.continue();
        });
        await page.goto(event.join_url, { waitUntil: 'commit' });
        const early = page.locator('section[data-first-visit] input[name=display_name]');
        await early.waitFor({ state: 'visible' });
        assert.equal(await page.textContent('#event-name'), 'Sommerfest am See');
        assert.equal(await page.textContent('section[data-first-visit] label'), 'Dein Name');
        assert.equal(await page.locator('section[data-first-visit] button').isDisabled(), true, 'it cannot send before the modules');
        const look = await page.evaluate(() => {
          const card = document.querySelector('section.card.join');
          const style = getComputedStyle(card);
          return { radius: style.borderRadius, background: style.backgroundColor, font: getComputedStyle(document.body).fontFamily };
        });
        assert.notEqual(look.radius, '0px', `the card is styled before the stylesheet file could come: ${JSON.stringify(look)}`);
        await screenshot(page, `first-visit-early-form-${backend}-390x844`);
        await early.type('Dana');

        release();
        const form = page.locator('section.join:not([data-first-visit]) form.join-form');
        await form.locator('button:not([disabled])').waitFor({ state: 'visible' });
        assert.equal(await form.locator('input[name=display_name]').inputValue(), 'Dana', 'what the guest typed stays');
        assert.equal(await page.evaluate(() => document.activeElement?.name), 'display_name');
        assert.equal(await page.locator('[data-first-visit]').count(), 0, 'one form, the page\'s own');
        assert.ok(!asked.some((p) => p.endsWith('style.css')), `the stylesheet is not asked for: ${asked.join(' ')}`);
        await form.locator('button').click();
        await page.locator('.uploader').waitFor({ state: 'visible' });
        const me = await page.evaluate(async () => (await fetch('/api/v1/me')).json());
        assert.equal(me.display_name, 'Dana');
        assert.deepEqual(problems, [], 'no console error (a refused inline style would be one)');
      });
    } finally {
      await server.stop();
    }
  });
}
