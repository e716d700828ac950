// People on the organiser's dashboard, on every backend: a photo deleted after an in-page
// question comes back with Undo; a guest blocked from a tile (the question names them and their
// photos) sees "The hosts have stopped your uploads" on their next photo instead of retries, and
// is unblocked from the list; a co-organiser added on the dashboard logs in on another phone and
// loses the session when revoked; the quota is typed in photos with the bytes shown beneath.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fixtures, onPhone, phone, startServer, join, choose, waitForItems, screenshot, eventually, PASSWORD, watchConsole, backends, unfold, guestOf, uploadPhoto, firstLine } from './helpers.mjs';

const f = fixtures({ server: false, photos: 3, photoOptions: { prefix: 'people', width: 320, height: 240 } });

async function login(page, server, event, password = PASSWORD) {
  await page.goto(`${server.base}/e/${event.slug}/organiser`);
  await page.fill('input[name=password]', password);
  await page.click('.login-form button[type=submit]');
  await page.locator('.dashboard').waitFor({ state: 'visible' });
}

const tiles = (page) => page.locator('[data-testid=gallery] .tile');

for (const backend of backends()) {
  test(`${backend}: people on the dashboard`, { timeout: 180_000 }, async (t) => {
    const server = await startServer({ backend, name: 'people' });
    try {
      await t.test('a photo deleted after the in-page question comes back with Undo', async () => {
        const event = await server.createEvent({ name: 'Undo' });
        const anna = await guestOf(server, event, 'Anna');
        await uploadPhoto(server, event, anna, f.photos[0]);
        const kept = await uploadPhoto(server, event, anna, f.photos[1]);
        await onPhone(f.browser, { locale: 'en-GB' }, async (page) => {
          const problems = watchConsole(page);
          let dialogs = 0;
          page.on('dialog', (d) => {
            dialogs += 1;
            d.dismiss();
          });
          await login(page, server, event);
          await eventually(async () => (await tiles(page).count()) === 2, { what: 'two tiles' });
          await page.locator(`[data-upload-id="${kept}"] .tile-open`).click();
          await page.click('dialog.lightbox[open] button[data-action=delete]');
          const question = page.locator('dialog.lightbox[open] [data-testid=confirm]');
          assert.equal(await question.locator('.confirm-question').textContent(), 'Really delete this photo?');
          await question.locator('button[data-action=confirm]').click();
          await eventually(async () => (await tiles(page).count()) === 1, { what: 'the tile gone' });
          const toast = page.locator('[data-testid=messages] .message[data-kind=note]', { has: page.locator('button[data-action=undo]') });
          await toast.waitFor({ state: 'visible' });
          assert.equal(await toast.locator('.message-text').textContent(), 'Photo deleted.');
          assert.equal(await toast.locator('button[data-action=undo]').textContent(), 'Undo');
          await screenshot(page, `people-undo-${backend}-390x844`);
          await toast.locator('button[data-action=undo]').click();
          await page.locator(`[data-testid=gallery] [data-upload-id="${kept}"]`).waitFor();
          assert.equal(await tiles(page).count(), 2, 'the tile is back');
          const rows = await server.uploads(event);
          assert.deepEqual(rows.map((u) => u.id).includes(kept), true, 'the server has it again');
          assert.equal(dialogs, 0, 'no window.confirm');
          assert.deepEqual(problems, []);
        });
      });

      await t.test('a guest blocked from a photo’s lightbox sees that the hosts stopped their uploads', async () => {
        const event = await server.createEvent({ name: 'Block' });
        const guestContext = await phone(f.browser, { locale: 'en-GB' });
        try {
          const guest = await guestContext.newPage();
          await join(guest, event, 'Cousin Max');
          await choose(guest, [f.photos[0]]);
          await waitForItems(guest, 1, 'done');
          await onPhone(f.browser, { locale: 'en-GB' }, async (page) => {
            const problems = watchConsole(page);
            await login(page, server, event);
            await tiles(page).first().waitFor();
            // Block is in the photo's lightbox (tiles carry no buttons of their own).
            await tiles(page).first().locator('.tile-open').click();
            await page.click('dialog.lightbox[open] button[data-action=block-guest]');
            const question = page.locator('dialog.lightbox[open] [data-testid=confirm]');
            await question.waitFor();
            assert.equal(await question.locator('.confirm-question').textContent(), 'Block Cousin Max? Their 1 photo will be hidden, and Cousin Max can no longer upload, like or comment.');
            await screenshot(page, `people-block-question-${backend}-390x844`);
            await question.locator('button[data-action=confirm]').click();
            await page.locator('dialog.lightbox[open] [data-testid=confirm]').waitFor({ state: 'detached' });
            await page.keyboard.press('Escape');
            const blockedList = page.locator('[data-testid=blocked-guests]');
            await blockedList.locator('li', { hasText: 'Cousin Max' }).waitFor();
            await page.waitForFunction(() => document.querySelector('[data-testid=gallery] .tile')?.dataset.status === 'hidden');
            await page.locator('.blocked-guests').scrollIntoViewIfNeeded();
            await screenshot(page, `people-blocked-list-${backend}-390x844`);

            // The guest's next photo is refused for good: a clear message, no retries.
            const posts = [];
            guest.on('request', (r) => {
              if (r.method() === 'POST' && r.url().endsWith('/uploads')) posts.push(r.url());
            });
            await choose(guest, [f.photos[1]]);
            await guest.locator('[data-client-upload-id][data-upload-state=failed][data-final=true]').waitFor({ timeout: 20_000 });
            await guest.waitForFunction(() => document.querySelector('.uploader')?.textContent.includes('The hosts have stopped your uploads'));
            assert.equal(await guest.locator('input[type=file][multiple]').isDisabled(), true, 'the picker is off');
            await guest.waitForTimeout(2500);
            assert.equal(posts.length, 1, 'sent once, not again and again');
            await screenshot(guest, `people-guest-blocked-${backend}-390x844`);

            // Unblocked from the list: the card goes, the guest may upload again.
            await blockedList.locator('button[data-action=unblock]').click();
            await page.locator('.blocked-guests').waitFor({ state: 'hidden' });
            const { body: me } = await server.call('GET', `/api/v1/events/${event.slug}/blocked-guests`, { token: event.organiserToken });
            assert.deepEqual(me.items, []);
            assert.deepEqual(problems, []);
          });
        } finally {
          await guestContext.close();
        }
      });

      await t.test('a co-organiser added on the dashboard logs in on another phone until revoked', async () => {
        const event = await server.createEvent({ name: 'Helpers' });
        await onPhone(f.browser, { locale: 'en-GB' }, async (page) => {
          const problems = watchConsole(page);
          await login(page, server, event);
          const card = page.locator('.co-organisers');
          await card.waitFor({ state: 'visible' });
          await unfold(card);
          await card.locator('input[name=co_label]').fill('Best man');
          await card.locator('input[name=co_password]').fill('short');
          await card.locator('button[type=submit]').click();
          await eventually(async () => (await firstLine(card.locator('.note'))) === 'The password needs at least 8 characters (at most 72 bytes).', { what: 'the short password refused' });
          await card.locator('input[name=co_password]').fill('best man secret');
          await card.locator('button[type=submit]').click();
          await card.locator('[data-testid=co-organisers] li', { hasText: 'Best man' }).waitFor();
          assert.equal(await card.locator('.note').textContent(), 'Best man can now log in with that password.');
          await card.scrollIntoViewIfNeeded();
          await screenshot(page, `people-co-organisers-${backend}-390x844`);

          await onPhone(f.browser, { locale: 'en-GB' }, async (helper) => {
            await login(helper, server, event, 'best man secret');
            await helper.locator('[data-testid=join-link]').waitFor();
            // Managing co-organisers is for the event's own password.
            await helper.waitForTimeout(500);
            assert.equal(await helper.locator('.co-organisers').isVisible(), false);

            await card.locator('button[data-action=revoke]').click();
            await card.locator('[data-testid=confirm] button[data-action=confirm]').click();
            await card.locator('[data-testid=co-organisers] li').waitFor({ state: 'detached' });
            const after = await helper.evaluate((slug) => fetch(`/api/v1/events/${slug}`, { method: 'PATCH', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ uploads_open: true }) }).then((r) => r.status), event.slug);
            assert.equal(after, 401, 'the helper’s session ended');
          });
          assert.deepEqual(problems, []);
        });
      });

      await t.test('the quota is typed in photos and shown in bytes', async () => {
        const event = await server.createEvent({ name: 'Quota' });
        await onPhone(f.browser, { locale: 'de-DE' }, async (page) => {
          await login(page, server, event);
          assert.equal(await page.textContent('label[for=guest_quota_photos]'), 'Fotos pro Gast');
          assert.equal(await page.inputValue('input[name=guest_quota_photos]'), '256');
          await page.fill('input[name=guest_quota_photos]', '500');
          assert.equal(await page.textContent('[data-testid=quota-shown]'), '≈ 2 GB pro Gast (ein Handyfoto ≈ 4 MB).');
          await page.click('.quota-form button[type=submit]');
          await eventually(async () => (await server.call('GET', `/api/v1/events/${event.slug}`, { token: event.organiserToken })).body.guest_quota_bytes === 500 * 4 * 1024 * 1024, { what: 'the quota in bytes' });
          await page.locator('.settings').scrollIntoViewIfNeeded();
          await screenshot(page, `people-quota-${backend}-390x844`);
        });
      });
    } finally {
      await server.stop();
    }
  });
}
