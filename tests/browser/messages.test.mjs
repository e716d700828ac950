// The page speaks in the page, never through the browser's alert() and confirm() boxes:
// deleting a photo asks in place (Cancel, Escape and Delete), a deleted photo is noted in the
// page's message area, and an action the server refuses says why in the lightbox's message
// area — in German and in English. Screenshots of each at phone size go to output/.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fixtures, onPhone, join, choose, waitForItems, screenshot, watchConsole, firstLine } from './helpers.mjs';

const f = fixtures({ server: 'messages', photos: 2, photoOptions: { width: 640, height: 480 } });

const WORDS = {
  de: { locale: 'de-DE', question: 'Dieses Foto wirklich löschen?', cancel: 'Abbrechen', delete: 'Löschen', deleted: 'Foto gelöscht.', invalidComment: 'Ein Kommentar braucht 1 bis 1000 Zeichen.', dismiss: 'Meldung schließen' },
  en: { locale: 'en-US', question: 'Really delete this photo?', cancel: 'Cancel', delete: 'Delete', deleted: 'Photo deleted.', invalidComment: 'A comment needs 1 to 1000 characters.', dismiss: 'Dismiss message' },
};

/** Records every alert/confirm/prompt the page opens (and answers it, so nothing hangs). */
function watchDialogs(page) {
  const opened = [];
  page.on('dialog', (d) => {
    opened.push(`${d.type()}: ${d.message()}`);
    d.dismiss().catch(() => {});
  });
  return opened;
}

/** Joins, uploads one photo, and opens it in the lightbox. */
async function ownPhotoOpen(page, event, photo) {
  await join(page, event, 'Lena');
  await choose(page, [photo]);
  await waitForItems(page, 1, 'done');
  await page.locator('[data-testid=gallery] .tile-open').first().click();
  await page.locator('dialog.lightbox[open] .lightbox-img').waitFor();
  await page.waitForFunction(() => document.querySelector('dialog.lightbox .lightbox-img')?.naturalWidth > 0);
}

for (const [lang, w] of Object.entries(WORDS)) {
  test(`${lang}: deleting asks in the page — Cancel and Escape keep the photo, Delete removes it`, { timeout: 60_000 }, async () => {
    const event = await f.server.createEvent();
    await onPhone(f.browser, { locale: w.locale }, async (page) => {
      const problems = watchConsole(page);
      const dialogs = watchDialogs(page);
      await ownPhotoOpen(page, event, f.photos[0]);
      const lightbox = page.locator('dialog.lightbox[open]');
      const deleteButton = lightbox.locator('button[data-action=delete]');
      const question = lightbox.locator('[data-testid=confirm]');

      await deleteButton.click();
      await question.waitFor();
      assert.equal(await question.getAttribute('role'), 'group');
      assert.equal(await question.locator('.confirm-question').textContent(), w.question);
      assert.equal(await question.locator('button[data-action=cancel]').textContent(), w.cancel);
      assert.equal(await question.locator('button[data-action=confirm]').textContent(), w.delete);
      assert.equal(await page.evaluate(() => document.activeElement?.dataset.action), 'cancel', 'focus on the safe choice');
      assert.equal(await deleteButton.count(), 0, 'the question stands in place of the button');
      await screenshot(page, `confirm-delete-${lang}-390x844`);

      await question.locator('button[data-action=cancel]').click();
      await deleteButton.waitFor();
      assert.equal(await question.count(), 0);
      assert.equal(await page.evaluate(() => document.activeElement?.dataset.action), 'delete', 'focus back on the button');
      await deleteButton.click();
      await question.waitFor();
      await page.keyboard.press('Escape');
      await deleteButton.waitFor();
      assert.equal(await lightbox.count(), 1, 'Escape takes back the question, not the lightbox');
      assert.equal((await f.server.uploads(event)).length, 1, 'cancelled twice: the photo is still there');

      await deleteButton.click();
      await question.locator('button[data-action=confirm]').click();
      await page.waitForFunction(() => document.querySelectorAll('[data-testid=gallery] .tile').length === 0);
      assert.equal((await f.server.uploads(event)).length, 0);
      const note = page.locator('[data-testid=messages] [role=status] .message');
      await note.waitFor();
      assert.equal(await note.locator('.message-text').textContent(), w.deleted);
      assert.equal(await note.locator('button[data-action=dismiss]').getAttribute('aria-label'), w.dismiss);
      await screenshot(page, `deleted-note-${lang}-390x844`);
      await note.locator('button[data-action=dismiss]').click();
      assert.equal(await note.count(), 0, 'dismissed');

      assert.deepEqual(dialogs, [], 'no alert or confirm box');
      assert.deepEqual(problems, []);
    });
  });

  test(`${lang}: a comment being typed survives the page switching language`, { timeout: 60_000 }, async () => {
    const event = await f.server.createEvent();
    await onPhone(f.browser, { locale: w.locale }, async (page) => {
      await ownPhotoOpen(page, event, f.photos[0]);
      const input = page.locator('dialog.lightbox[open] .comment-form input[name=text]');
      await input.fill('Wie schön! / How lovely!');
      const other = lang === 'de' ? 'en' : 'de';
      const send = page.locator('dialog.lightbox[open] .comment-form button[type=submit]');
      const before = await send.textContent();
      // The lightbox redraws itself in the other language (synchronously, within setLang).
      await page.evaluate(async (next) => (await import(new URL('i18n.js', document.querySelector('script[type=module]').src))).setLang(next), other);
      assert.notEqual(await send.textContent(), before, 'the form was drawn again, in the other language');
      assert.equal(await input.inputValue(), 'Wie schön! / How lovely!', 'what the guest typed is still there');
      await page.evaluate(async (back) => (await import(new URL('i18n.js', document.querySelector('script[type=module]').src))).setLang(back), lang);
    });
  });

  test(`${lang}: a comment the server refuses says why in the page, until dismissed`, { timeout: 60_000 }, async () => {
    const event = await f.server.createEvent();
    await onPhone(f.browser, { locale: w.locale }, async (page) => {
      const dialogs = watchDialogs(page);
      const refusals = [];
      page.on('response', (r) => {
        if (r.request().method() === 'POST' && r.url().endsWith('/comments')) refusals.push(r.status());
      });
      await ownPhotoOpen(page, event, f.photos[1]);
      const lightbox = page.locator('dialog.lightbox[open]');
      // Only a zero-width space: empty once the server has cleaned it, so it is refused.
      await lightbox.locator('input[name=text]').fill('\u200b');
      await lightbox.locator('.comment-form button[type=submit]').click();
      const alert = lightbox.locator('[data-testid=messages] [role=alert] .message');
      await alert.waitFor();
      assert.deepEqual(refusals, [422], 'the server refused it, once (a refusal is not retried)');
      assert.equal(await firstLine(alert.locator('.message-text')), w.invalidComment);
      assert.ok(await alert.isVisible(), 'visible over the photo');
      await screenshot(page, `refused-comment-${lang}-390x844`);

      // The same refusal again: still one message, not a stack.
      await lightbox.locator('.comment-form button[type=submit]').click();
      await page.waitForFunction(() => document.querySelectorAll('dialog.lightbox [role=alert] .message').length === 1 && document.querySelector('.comment-form input').disabled === false);
      assert.equal(refusals.length, 2);
      await page.waitForTimeout(500);
      assert.equal(await alert.count(), 1);
      await alert.locator('button[data-action=dismiss]').click();
      assert.equal(await alert.count(), 0, 'dismissed');
      const [upload] = await f.server.uploads(event);
      const comments = await f.server.call('GET', `/api/v1/uploads/${upload.id}/comments`, { token: event.organiserToken });
      assert.equal(comments.status, 200);
      assert.deepEqual(comments.body.items, [], 'nothing was stored');
      assert.deepEqual(dialogs, [], 'no alert box');
    });
  });
}
