// The gallery and what surrounds it: likes and comments in the lightbox (a comment holding
// `<script>` is shown as text), deleting one's own photo (quota refunded), more photos loaded
// by scrolling, German and English, the security headers and the session cookie's flags.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fixtures, onPhone, screenshot, join, choose, waitForItems, watchConsole, sleep } from './helpers.mjs';

const f = fixtures({ server: 'gallery', photos: 2, photoOptions: { width: 400, height: 300 } });

test('a comment containing <script> is shown as text; likes count', { timeout: 60_000 }, async () => {
  const event = await f.server.createEvent();
  await onPhone(f.browser, { locale: 'en-US' }, async (page, context) => {
    const problems = watchConsole(page);
    await join(page, event, '<img src=x onerror="window.__pwned=1">');
    await choose(page, [f.photos[0]]);
    await waitForItems(page, 1, 'done');
    await page.locator('[data-testid=gallery] .tile-open').first().click();
    const dialog = page.locator('dialog.lightbox[open]');
    await dialog.waitFor();

    await dialog.locator('button[data-action=like]').click();
    await page.waitForFunction(() => document.querySelector('dialog.lightbox .like-count')?.textContent === '1');
    assert.equal(await dialog.locator('button[data-action=like]').getAttribute('aria-pressed'), 'true');

    const evil = '<script>window.__pwned=2</script><b>bold</b>';
    await dialog.locator('input[name=text]').fill(evil);
    await dialog.locator('.comment-form button[type=submit]').click();
    await page.waitForFunction(() => document.querySelectorAll('dialog.lightbox .comment').length === 1);
    assert.equal(await dialog.locator('.comment .comment-text').textContent(), evil, 'the comment, as text');
    assert.equal(await dialog.locator('.comments script, .comments b').count(), 0, 'no element made from it');
    assert.equal(await page.evaluate(() => window.__pwned), undefined);
    assert.match(await dialog.locator('.who').textContent(), /<img src=x/, 'the display name, as text');
    await screenshot(page, 'lightbox-comment-390x844');

    // After a reload the like and the comment are still there (they are the server's).
    await page.reload();
    await page.locator('[data-testid=gallery] .tile-open').first().click();
    await page.waitForFunction(() => document.querySelector('dialog.lightbox .comment-text')?.textContent.includes('<script>'));
    assert.equal(await page.locator('dialog.lightbox .like-count').textContent(), '1');
    assert.deepEqual(problems, []);
  });
});

test('a guest deletes their own photo from "my photos" and gets the quota back', { timeout: 60_000 }, async () => {
  const event = await f.server.createEvent();
  await onPhone(f.browser, { locale: 'de-DE' }, async (page, context) => {
    await join(page, event, 'Jonas');
    await choose(page, [f.photos[1]]);
    await waitForItems(page, 1, 'done');
    await page.locator('button[data-filter=mine]').click();
    await page.locator('[data-testid=gallery] .tile[data-mine=true] .tile-open').click();
    await page.locator('dialog.lightbox[open] button[data-action=delete]').click();
    await page.locator('dialog.lightbox[open] [data-testid=confirm] button[data-action=confirm]').click();
    await page.waitForFunction(() => document.querySelectorAll('[data-testid=gallery] .tile').length === 0);
    await page.waitForFunction(() => document.querySelector('[data-testid=quota]').dataset.usedBytes === '0');
    assert.equal((await f.server.uploads(event)).length, 0);
  });
});

test('the gallery loads more photos as one scrolls, newest first', { timeout: 60_000 }, async () => {
  const event = await f.server.createEvent();
  await onPhone(f.browser, { locale: 'en-US' }, async (page, context) => {
    await join(page, event, 'Photographer');
    // 40 photos straight through the API (the page loads 30 at a time).
    const token = await page.evaluate(() => null);
    assert.equal(token, null);
    const keys = [];
    for (let i = 0; i < 40; i += 1) {
      const key = await page.evaluate(async ({ i }) => {
        const canvas = new OffscreenCanvas(64, 48);
        const ctx = canvas.getContext('2d');
        ctx.fillStyle = `hsl(${i * 9} 80% 50%)`;
        ctx.fillRect(0, 0, 64, 48);
        const blob = await canvas.convertToBlob({ type: 'image/png' });
        const form = new FormData();
        const key = crypto.randomUUID();
        form.append('client_upload_id', key);
        form.append('file', blob, `p${i}.png`);
        const r = await fetch(location.pathname.replace(/^\/e\//, '/api/v1/events/') + '/uploads', { method: 'POST', body: form });
        if (r.status !== 201) throw new Error(`upload ${r.status}`);
        return key;
      }, { i });
      keys.push(key);
    }
    await page.reload();
    await page.waitForFunction(() => document.querySelectorAll('[data-testid=gallery] .tile').length >= 30);
    for (let i = 0; i < 10; i += 1) {
      await page.mouse.wheel(0, 4000);
      await sleep(200);
      if ((await page.locator('[data-testid=gallery] .tile').count()) === 40) break;
    }
    await page.waitForFunction(() => document.querySelectorAll('[data-testid=gallery] .tile').length === 40);
    const ids = await page.$$eval('[data-testid=gallery] .tile', (els) => els.map((e) => e.dataset.uploadId));
    const rows = await f.server.uploads(event);
    assert.deepEqual(ids, rows.map((r) => r.id), 'the server’s order: newest first');
  });
});

test('German and English: chosen from the browser, switchable, remembered', { timeout: 60_000 }, async () => {
  const event = await f.server.createEvent();
  await onPhone(f.browser, { locale: 'de-DE' }, async (page, context) => {
    await page.goto(event.join_url);
    await page.locator('input[name=display_name]').waitFor();
    assert.equal(await page.getAttribute('html', 'lang'), 'de');
    assert.equal(await page.textContent('label[for=display_name]'), 'Dein Name');
    await join(page, event, 'Marie');
    assert.match(await page.textContent('.pick'), /Fotos & Videos hochladen/);
    await page.click('button[data-action=lang]');
    assert.equal(await page.getAttribute('html', 'lang'), 'en');
    assert.match(await page.textContent('.pick'), /Upload photos & videos/);
    assert.equal(await page.textContent('button[data-filter=mine]'), 'My photos');
    await page.reload();
    await page.locator('.uploader').waitFor({ state: 'visible' });
    assert.match(await page.textContent('.pick'), /Upload photos & videos/, 'the choice is remembered');
    await page.click('button[data-action=lang]');
    assert.match(await page.textContent('.pick'), /Fotos & Videos hochladen/);
  });
});

test('security headers on the page, and an HttpOnly, SameSite=Lax session cookie', { timeout: 30_000 }, async () => {
  const event = await f.server.createEvent();
  for (const p of ['/', `/e/${event.slug}`, '/static/app.js', '/api/v1/me']) {
    const r = await fetch(f.server.base + p);
    const csp = r.headers.get('content-security-policy') || '';
    assert.match(csp, /script-src 'self'/, `${p}: CSP`);
    assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/, `${p}: no inline scripts`);
    assert.equal(r.headers.get('x-content-type-options'), 'nosniff', p);
    assert.ok(r.headers.get('referrer-policy'), `${p}: Referrer-Policy`);
  }
  await onPhone(f.browser, {}, async (page, context) => {
    await join(page, event, 'Cookie Monster');
    const cookies = await context.cookies();
    const guest = cookies.find((c) => c.name === 'confetti_guest');
    assert.ok(guest, 'the guest cookie');
    assert.equal(guest.httpOnly, true);
    assert.equal(guest.sameSite, 'Lax');
    assert.equal(await page.evaluate(() => document.cookie), '', 'not readable by scripts');
  });
});

test('a photo the organiser hides leaves the other guests’ galleries at once, and stays in its uploader’s', { timeout: 60_000 }, async () => {
  const event = await f.server.createEvent();
  await onPhone(f.browser, { locale: 'en-US' }, async (uploader) => {
    await join(uploader, event, 'Uploader');
    await choose(uploader, [f.photos[0]]);
    await waitForItems(uploader, 1, 'done');
    await onPhone(f.browser, { locale: 'en-US' }, async (other) => {
      await join(other, event, 'Other guest');
      await other.locator('[data-testid=gallery] .tile').waitFor();
      const [upload] = await f.server.uploads(event);
      const r = await f.server.call('PATCH', `/api/v1/uploads/${upload.id}`, { token: event.organiserToken, body: { hidden: true } });
      assert.equal(r.status, 200);
      await other.waitForFunction(() => document.querySelectorAll('[data-testid=gallery] .tile').length === 0, null, { timeout: 10_000 });
      await uploader.waitForFunction((id) => document.querySelector(`[data-upload-id="${id}"]`)?.dataset.status === 'hidden', upload.id, { timeout: 10_000 });
    });
  });
});
