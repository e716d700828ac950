// Moderation at the speed of a party, in real pages on every backend: the review view approves
// 50 waiting photos by keyboard (timed: the figure for "time to approve 50 waiting photos"),
// rejects one with a reason its sender then reads on their own tile, and steps with the arrow
// keys; the gallery's selection mode hides several photos in one request; the dashboard of 36
// photos stays short (no buttons under the tiles) and has one download button; unblocking a
// guest can show their photos again. Phone and
// desktop screenshots of the dashboard, the review view and the selection mode.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fixtures, phone, desktop, startServer, join, choose, waitForItems, screenshot, backends, watchConsole, PASSWORD, guestOf, uploadPhoto, eventually } from './helpers.mjs';

const f = fixtures({ server: false, photos: 4, photoOptions: { prefix: 'review', width: 1200, height: 900 } });

/** Waits until every upload of the event is done processing; returns them. */
async function allReady(server, event, n) {
  return eventually(async () => {
    const items = await server.uploads(event);
    return items.length === n && items.every((u) => u.status !== 'processing') ? items : null;
  }, { timeout: 120_000, what: `${n} uploads processed` });
}

async function login(page, server, event) {
  await page.goto(`${server.base}/e/${event.slug}/organiser`);
  await page.fill('input[name=password]', PASSWORD);
  await page.click('.login-form button[type=submit]');
  await page.locator('.dashboard').waitFor({ state: 'visible' });
}

for (const backend of backends()) {
  test(`${backend}: the review view approves 50 waiting photos by keyboard (timed) and rejects one with a reason its sender reads`, { timeout: 300_000 }, async () => {
    const server = await startServer({ backend, name: 'review' });
    const contexts = [];
    try {
      const event = await server.createEvent({ name: 'Gartenfest' });
      const gate = await server.call('PATCH', `/api/v1/events/${event.slug}`, { token: event.organiserToken, body: { review_uploads: true } });
      assert.equal(gate.status, 200);

      // Ben sends one photo from his phone's page; Anna 50 through the API.
      const benContext = await phone(f.browser, { locale: 'de-DE' });
      contexts.push(benContext);
      const ben = await benContext.newPage();
      const benProblems = watchConsole(ben);
      await join(ben, event, 'Ben');
      await choose(ben, [f.photos[0]]);
      await waitForItems(ben, 1, 'done');
      const [bens] = await server.uploads(event);
      const anna = await guestOf(server, event, 'Anna');
      for (let i = 0; i < 50; i += 1) await uploadPhoto(server, event, anna, f.photos[1 + (i % 3)]);
      await allReady(server, event, 51);

      const hostContext = await desktop(f.browser, { locale: 'en-GB' });
      contexts.push(hostContext);
      const host = await hostContext.newPage();
      const problems = watchConsole(host);
      await login(host, server, event);
      await host.waitForFunction(() => document.querySelector('[data-testid=waiting-badge]')?.dataset.count === '51', null, { timeout: 30_000 });
      const requests = [];
      host.on('request', (r) => {
        if (r.url().endsWith('/uploads/moderation')) requests.push(r);
      });

      // The badge opens the review view on the oldest waiting photo: Ben's, large, with the keys said.
      await host.click('[data-testid=waiting-badge]');
      const view = host.locator('dialog.review[open]');
      await view.waitFor();
      assert.equal(await view.getAttribute('data-upload-id'), bens.id, 'the oldest first');
      await host.waitForFunction(() => document.querySelector('dialog.review[open] img.review-img')?.complete);
      assert.equal(await host.textContent('[data-testid=review-position]'), 'Photo 1 of 51');
      assert.equal(await host.isVisible('[data-testid=review-keys]'), true, 'the keys are shown on a desktop');
      const shown = await host.$eval('dialog.review[open] img.review-img', (img) => ({ w: img.getBoundingClientRect().width, src: img.getAttribute('src') }));
      assert.ok(shown.w > 700, `a large preview: ${shown.w} px wide`);
      assert.match(shown.src, /\/preview$/);
      await screenshot(host, `review-view-desktop-${backend}`);

      // Arrows move; R rejects with the reason typed.
      await host.keyboard.press('ArrowRight');
      assert.equal(await host.textContent('[data-testid=review-position]'), 'Photo 2 of 51');
      await host.keyboard.press('ArrowLeft');
      assert.equal(await host.textContent('[data-testid=review-position]'), 'Photo 1 of 51');
      await host.fill('[data-testid=review-reason]', 'Leider zu dunkel');
      await host.locator('dialog.review [data-action=review-approve]').focus();
      await host.keyboard.press('r');
      await host.waitForFunction(() => document.querySelector('dialog.review').dataset.left === '50');
      const rejected = await eventually(async () => {
        const r = await server.call('GET', `/api/v1/uploads/${bens.id}`, { token: event.organiserToken });
        return r.body.rejected ? r.body : null;
      }, { what: 'Ben’s photo rejected' });
      assert.equal(rejected.status, 'hidden');
      assert.equal(rejected.rejected_reason, 'Leider zu dunkel');

      // A approves, 50 times: timed from the first key to the server holding every approval.
      const t0 = performance.now();
      for (let left = 49; left >= 0; left -= 1) {
        await host.keyboard.press('a');
        await host.waitForFunction((n) => document.querySelector('dialog.review').dataset.left === String(n), left);
      }
      const pageDone = performance.now() - t0;
      await eventually(async () => (await server.uploads(event)).filter((u) => u.review === 'pending' && !u.rejected).length === 0, { timeout: 30_000, what: 'no photo left waiting' });
      const serverDone = performance.now() - t0;
      console.log(`time to approve 50 waiting photos with the review view (${backend}, keyboard A ×50): ${(serverDone / 1000).toFixed(2)} s (the view had moved past the last one after ${(pageDone / 1000).toFixed(2)} s)`);
      assert.ok(serverDone < 60_000, `50 approvals in ${serverDone} ms`);
      await host.locator('[data-testid=review-done]').waitFor();
      assert.equal(requests.length, 51, 'one request per decision');
      const approved = (await server.uploads(event)).filter((u) => u.review === 'approved');
      assert.equal(approved.length, 50);
      await host.keyboard.press('Escape');
      await host.waitForFunction(() => document.querySelector('[data-testid=waiting-badge]').hidden);

      // Ben reads why on his own tile, in his language's page; nobody else sees the photo.
      const tile = `[data-testid=gallery] .tile[data-upload-id="${bens.id}"]`;
      await ben.waitForFunction((sel) => document.querySelector(`${sel} [data-testid=tile-reason]`), tile, { timeout: 20_000 });
      assert.equal(await ben.textContent(`${tile} [data-testid=tile-reason]`), 'Von den Gastgebern abgelehnt: Leider zu dunkel');
      assert.equal(await ben.textContent(`${tile} .badge`), 'Abgelehnt');
      await ben.locator(tile).scrollIntoViewIfNeeded();
      await screenshot(ben, `review-guest-rejected-phone-${backend}`);
      const other = await guestOf(server, event, 'Clara');
      const seen = await server.call('GET', `/api/v1/events/${event.slug}/uploads?limit=100`, { token: other });
      assert.equal(seen.body.items.some((u) => u.id === bens.id), false);
      assert.equal(seen.body.items.length, 50);
      assert.deepEqual(problems, []);
      assert.deepEqual(benProblems, []);
    } finally {
      for (const c of contexts) await c.close();
      await server.stop();
    }
  });

  test(`${backend}: 36 photos make a short dashboard; selecting hides several in one request; one download button`, { timeout: 240_000 }, async () => {
    const server = await startServer({ backend, name: 'select' });
    const contexts = [];
    try {
      const event = await server.createEvent({ name: 'Sommerfest' });
      const anna = await guestOf(server, event, 'Anna');
      for (let i = 0; i < 34; i += 1) await uploadPhoto(server, event, anna, f.photos[i % 4]);
      await server.call('PATCH', `/api/v1/events/${event.slug}`, { token: event.organiserToken, body: { review_uploads: true } });
      for (let i = 0; i < 2; i += 1) await uploadPhoto(server, event, anna, f.photos[i]);
      const uploads = await allReady(server, event, 36);

      for (const [size, open] of [['phone', (b) => phone(b, { locale: 'en-GB' })], ['desktop', (b) => desktop(b, { locale: 'en-GB' })]]) {
        const context = await open(f.browser);
        contexts.push(context);
        const page = await context.newPage();
        const problems = watchConsole(page);
        await login(page, server, event);
        // The gallery loads 30 at a time, the rest as one scrolls.
        await eventually(async () => {
          await page.evaluate(() => document.querySelector('[data-testid=gallery] .tile:last-child')?.scrollIntoView());
          return (await page.locator('[data-testid=gallery] .tile[data-picture=thumb]').count()) === 36;
        }, { timeout: 60_000, what: '36 tiles' });
        await page.waitForFunction(() => [...document.querySelectorAll('[data-testid=gallery] .tile img')].every((i) => i.complete), null, { timeout: 60_000 });
        assert.equal(await page.locator('[data-testid=gallery] .tile button').count(), 36, 'one control per tile: the photo itself');
        const height = await page.evaluate(() => document.documentElement.scrollHeight);
        const grid = await page.evaluate(() => document.querySelector('[data-testid=gallery]').getBoundingClientRect().height);
        console.log(`dashboard with 36 photos (${backend}, ${size}): page ${height} px tall, the gallery ${Math.round(grid)} px`);
        if (size === 'phone') assert.ok(grid < 1600, `the gallery of 36 photos is ${grid} px tall on a phone`);
        // One download button; its choices open beneath it.
        assert.equal(await page.locator('[data-testid=download-menu] > summary').count(), 1);
        assert.equal(await page.isVisible('a[data-action=download-with-hidden]'), false);
        await page.click('[data-testid=download-menu] > summary');
        assert.equal(await page.isVisible('a[data-action=download]'), true);
        assert.equal(await page.isVisible('a[data-action=download-with-pending]'), true, 'two photos wait');
        await page.locator('[data-testid=download-menu]').scrollIntoViewIfNeeded();
        await screenshot(page, `review-download-menu-${size}-${backend}`);
        await page.locator('[data-testid=gallery]').scrollIntoViewIfNeeded();
        await screenshot(page, `review-dashboard-${size}-${backend}`);
        await page.click('[data-testid=download-menu] > summary');

        if (size === 'phone') {
          // The review view on a phone: large, no key hints.
          await page.click('[data-testid=pending] button[data-action=review-open]');
          await page.locator('dialog.review[open] img.review-img').waitFor();
          await page.waitForFunction(() => document.querySelector('dialog.review[open] img.review-img')?.complete);
          assert.equal(await page.isVisible('[data-testid=review-keys]'), false, 'no key hints on a touch screen');
          await screenshot(page, `review-view-phone-${backend}`);
          await page.click('dialog.review [data-action=close]');
          await page.locator('dialog.review[open]').waitFor({ state: 'detached' });
        }

        // Select mode: tapping selects (the lightbox stays shut); Hide acts on all in one request.
        const requests = [];
        page.on('request', (r) => {
          if (r.url().endsWith('/uploads/moderation')) requests.push(JSON.parse(r.postData()));
        });
        await page.click('button[data-action=select-mode]');
        const ready = uploads.filter((u) => u.review === 'approved' && u.status === 'ready');
        const chosen = size === 'phone' ? ready.slice(0, 3) : ready.slice(3, 7);
        for (const u of chosen) await page.click(`[data-testid=gallery] .tile[data-upload-id="${u.id}"] .tile-open`);
        assert.equal(await page.locator('dialog.lightbox[open]').count(), 0, 'a tap selects, it does not open');
        assert.equal(await page.textContent('[data-testid=select-count]'), `${chosen.length} selected`);
        assert.equal(await page.getAttribute(`[data-testid=gallery] .tile[data-upload-id="${chosen[0].id}"] .tile-open`, 'aria-pressed'), 'true');
        await screenshot(page, `review-selection-${size}-${backend}`);
        await page.click('button[data-action=selected-hide]');
        await page.waitForFunction((ids) => ids.every((id) => document.querySelector(`[data-testid=gallery] .tile[data-upload-id="${id}"]`)?.dataset.status === 'hidden'), chosen.map((u) => u.id));
        assert.equal(requests.length, 1, 'one request');
        assert.deepEqual(requests[0], { action: 'hide', upload_ids: chosen.map((u) => u.id) });
        const now = await server.uploads(event);
        for (const u of chosen) assert.equal(now.find((x) => x.id === u.id).status, 'hidden');
        assert.equal(now.filter((u) => u.status === 'hidden').length, size === 'phone' ? 3 : 7, 'only the selected ones');
        assert.equal(await page.textContent('[data-testid=select-count]'), '0 selected');
        await page.click('button[data-action=select-mode]');
        // Out of select mode a tap opens the lightbox again, with Block and Set as cover there.
        await page.click(`[data-testid=gallery] .tile[data-upload-id="${ready[10].id}"] .tile-open`);
        await page.locator('dialog.lightbox[open] button[data-action=block-guest]').waitFor();
        assert.equal(await page.locator('dialog.lightbox[open] button[data-action=set-cover]').count(), 1);
        await page.keyboard.press('Escape');

        if (size === 'desktop') {
          // Blocked, then "Unblock and show their photos again": what the block hid comes back,
          // the photos hidden by hand stay hidden.
          const guestId = uploads[0].guest.id;
          const blocked = await server.call('POST', `/api/v1/events/${event.slug}/guests/${guestId}/block`, { token: event.organiserToken });
          assert.equal(blocked.status, 200);
          await page.reload();
          await page.locator('[data-testid=blocked-guests] button[data-action=unblock-and-show]').click();
          await page.locator('.blocked-guests').waitFor({ state: 'hidden' });
          const after = await eventually(async () => {
            const items = await server.uploads(event);
            return items.filter((u) => u.status === 'hidden').length === 7 ? items : null;
          }, { what: 'the photos the block hid shown again' });
          for (const u of chosen) assert.equal(after.find((x) => x.id === u.id).status, 'hidden', 'hidden by hand: still hidden');
          await page.waitForFunction(() => document.querySelectorAll('[data-testid=gallery] .tile[data-status=hidden]').length === 7, null, { timeout: 20_000 });
        }
        assert.deepEqual(problems, []);
      }
    } finally {
      for (const c of contexts) await c.close();
      await server.stop();
    }
  });
}
