// The page's own words: every refusal code the server can answer has the page's words in
// German and English; a refusal shows them first and the server's sentence (English) as a
// second line; the summary counts the whole batch across a reload in the middle of it and calls
// a video a video. Both databases.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { ADMIN_TOKEN, OUTPUT, PASSWORD, backends, choose, desktop, fixtures, join, makePhotos, onPhone, screenshot, startServer, waitForItems, watchConsole } from './helpers.mjs';

const f = fixtures({ server: false });

/** A 2 s phone-like clip. */
function clip() {
  const file = path.join(OUTPUT, 'words-clip.mp4');
  if (!fs.existsSync(file)) {
    execFileSync('ffmpeg', ['-hide_banner', '-loglevel', 'error', '-y', '-f', 'lavfi', '-i', 'testsrc2=size=320x240:rate=30', '-t', '2', '-c:v', 'libx264', '-pix_fmt', 'yuv420p', file]);
  }
  return file;
}

test('every code of the server has the page’s words in German and English', { timeout: 60_000 }, async () => {
  const server = await startServer({ name: 'words-codes' });
  try {
    const doc = (await server.call('GET', '/api/v1/openapi.json')).body;
    const codes = doc.components.schemas.ErrorCode.enum;
    assert.ok(codes.length >= 40, `the server's codes: ${codes.length}`);
    await onPhone(f.browser, { locale: 'de-DE' }, async (page) => {
      await page.goto(server.base);
      const missing = await page.evaluate(async (codes) => {
        const i18n = await import('/static/i18n.js');
        const out = [];
        for (const language of ['de', 'en']) {
          for (const code of codes) if (i18n.tIn(language, `err_${code}`) === `err_${code}` || (language === 'de' && i18n.tIn('de', `err_${code}`) === i18n.tIn('en', `err_${code}`))) out.push(`${language}:${code}`);
        }
        return out;
      }, codes);
      assert.deepEqual(missing, [], 'codes without words (or German words that are the English ones)');
    });
  } finally {
    await server.stop();
  }
});

for (const backend of backends()) {
  test(`${backend}: the summary counts the whole batch across a reload and names the video; a refusal in German with the server’s words second`, { timeout: 180_000 }, async () => {
    const server = await startServer({ backend, name: 'words' });
    const photos = await makePhotos(f.browser, 6, { prefix: `words-${backend}`, width: 640, height: 480 });
    try {
      const event = await server.createEvent({ name: 'Gartenfest' });
      await onPhone(f.browser, { locale: 'de-DE' }, async (page) => {
        const problems = watchConsole(page);
        await join(page, event, 'Oma Inge');
        // Three photos reach the server; then the connection fails for every upload, until the reload.
        let passed = 0;
        await page.route('**/api/v1/events/*/uploads**', (route) => {
          const url = new URL(route.request().url());
          // Reads pass: the page's reads, and its question which of the picked files the server has.
          if (route.request().method() === 'GET' || url.pathname.endsWith('/uploads/known')) return route.continue();
          if (url.pathname.endsWith('/uploads') && passed < 3) {
            passed += 1;
            return route.continue();
          }
          return route.abort('connectionreset');
        });
        await choose(page, [...photos, clip()]);
        await waitForItems(page, 3, 'done');
        await page.unrouteAll({ behavior: 'ignoreErrors' });
        await page.reload();
        await page.locator('.uploader').waitFor({ state: 'visible' });
        const summary = page.locator('[data-testid=queue-summary]');
        await page.waitForFunction(() => document.querySelector('[data-testid=queue-summary]')?.dataset.sent === '7', null, { timeout: 60_000 });
        assert.equal(await summary.getAttribute('data-total'), '7', 'the whole batch, not the 4 left after the reload');
        // A photo the service worker sent while the page reloaded is one the reloaded page finds
        // stored under its own key: already uploaded (as after a lost answer), and counted. The
        // worker may have sent any of the four left before the page asked.
        assert.match(await summary.locator('.q-summary-text').textContent(), /^Alle gesendet: 6 Fotos und 1 Video( · [1-4] schon da)?$/);
        assert.equal((await server.uploads(event)).length, 7, 'each stored once');
        await screenshot(page, `words-summary-${backend}-390x844`);
        assert.deepEqual(problems, []);
      });

      // A name the server cleans to nothing (zero-width spaces): refused with 400 `invalid_request`,
      // shown in German, the server's sentence under it.
      await onPhone(f.browser, { locale: 'de-DE' }, async (page) => {
        await page.goto(`${server.base}/e/${event.slug}/organiser`);
        await page.fill('input[name=password]', PASSWORD);
        await page.click('.login-form button[type=submit]');
        await page.locator('.dashboard').waitFor({ state: 'visible' });
        await page.fill('input[name=event_name]', '\u200b\u200b');
        await page.click('[data-action=save-name]');
        const note = page.locator('[data-testid=name-note]');
        await note.locator('.server-detail').waitFor();
        const first = await note.evaluate((el) => el.firstChild.textContent);
        assert.equal(first, 'Diese Angabe nimmt der Server nicht an.');
        assert.match(await note.locator('.server-detail').textContent(), /^Der Server sagt: „.+“$/);
        assert.equal(await note.locator('.server-detail').getAttribute('lang'), 'en');
        assert.equal((await server.call('GET', `/api/v1/events/${event.slug}`)).body.name, 'Gartenfest', 'nothing changed');
        await note.scrollIntoViewIfNeeded();
        await screenshot(page, `words-refusal-${backend}-390x844`);
      });
      const context = await desktop(f.browser, { locale: 'de-DE' });
      try {
        const page = await context.newPage();
        await page.goto(`${server.base}/admin`);
        await page.fill('input[name=admin_token]', ADMIN_TOKEN);
        await page.click('[data-testid=admin-login] button[type=submit]');
        const card = page.locator(`article[data-slug="${event.slug}"]`);
        await card.locator('button[data-action=rename]').click();
        await card.locator('input[name=event_name]').fill('\u200b');
        await card.locator('[data-action=save-name]').click();
        await card.locator('[data-testid=name-note] .server-detail').waitFor();
        assert.match(await card.locator('[data-testid=name-note]').textContent(), /^Diese Angabe nimmt der Server nicht an\.Der Server sagt/);
        await card.locator('[data-testid=name-note]').scrollIntoViewIfNeeded();
        await screenshot(page, `words-refusal-admin-${backend}-1280x800`);
      } finally {
        await context.close();
      }
    } finally {
      await server.stop();
    }
  });
}
