// One retry policy (static/retry.js) for the page's API calls and for the upload queue: what is
// temporary and what is permanent, how long is waited and when the page gives up — checked in
// the served module itself — and both callers following it: a gallery page and an upload the
// server answers 503 once are tried again (the upload with the same key), a refusal is not.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fixtures, onPhone, join, choose, waitForItems, eventually } from './helpers.mjs';

const f = fixtures({ server: 'retry', photos: 1, photoOptions: { width: 320, height: 240 } });

test('the policy: temporary and permanent failures, Retry-After as a floor, when to give up', { timeout: 30_000 }, async () => {
  const event = await f.server.createEvent();
  await onPhone(f.browser, {}, async (page) => {
    await page.goto(`${f.server.base}/e/${event.slug}`);
    const r = await page.evaluate(async () => {
      const { INTERACTIVE, BACKGROUND, isTemporary, retryDelay, tapMayHelp } = await import('/static/retry.js');
      const temporary = [0, 408, 429, 500, 502, 503, 504, 507].filter((status) => isTemporary({ status }));
      const permanent = [400, 401, 403, 404, 409, 410, 413, 415, 422].filter((status) => !isTemporary({ status }));
      return {
        temporary,
        permanent,
        inFlight: isTemporary({ status: 409, code: 'idempotency_key_in_flight' }),
        otherConflict: isTemporary({ status: 409, code: 'client_upload_id_conflict' }),
        firstWait: retryDelay(INTERACTIVE, 1, { status: 503 }),
        floor: retryDelay(INTERACTIVE, 1, { status: 429, retryAfterMs: 3000 }),
        tooLong: retryDelay(INTERACTIVE, 1, { status: 429, retryAfterMs: 60_000 }),
        usedUp: retryDelay(INTERACTIVE, INTERACTIVE.attempts, { status: 503 }),
        refused: retryDelay(BACKGROUND, 1, { status: 422 }),
        queueLong: retryDelay(BACKGROUND, 1, { status: 429, retryAfterMs: 120_000 }),
        queueLate: retryDelay(BACKGROUND, 50, { status: 0 }),
        // "Send now" only when the next automatic try is far off: not after one or two failures.
        tapEarly: [1, 2, 3].some((n) => tapMayHelp(BACKGROUND, retryDelay(BACKGROUND, n, { status: 0 }))),
        tapLate: tapMayHelp(BACKGROUND, retryDelay(BACKGROUND, 8, { status: 0 })),
        tapLongRetryAfter: tapMayHelp(BACKGROUND, retryDelay(BACKGROUND, 1, { status: 503, retryAfterMs: 120_000 })),
      };
    });
    assert.deepEqual(r.temporary, [0, 408, 429, 500, 502, 503, 504, 507]);
    assert.deepEqual(r.permanent, [400, 401, 403, 404, 409, 410, 413, 415, 422]);
    assert.equal(r.inFlight, true, 'the same key still being worked on');
    assert.equal(r.otherConflict, false);
    assert.ok(r.firstWait > 0 && r.firstWait <= 400, `a quick first retry: ${r.firstWait}`);
    assert.ok(r.floor >= 3000, 'Retry-After is never shortened');
    assert.equal(r.tooLong, null, 'nobody waits a minute for a tap');
    assert.equal(r.usedUp, null, 'a few tries, then the page says what went wrong');
    assert.equal(r.refused, null);
    assert.ok(r.queueLong >= 120_000, 'the queue waits as long as the server asks');
    assert.ok(r.queueLate > 0 && r.queueLate <= 60_000, `the queue never gives up, and waits at most a minute: ${r.queueLate}`);
    assert.equal(r.tapEarly, false, 'a short wait is waited out: no button');
    assert.equal(r.tapLate, true, 'after many failures the next try is far off: "Send now"');
    assert.equal(r.tapLongRetryAfter, true, 'the server asked for a long wait');
  });
});

test('a 503 is tried again by the API helper and by the queue (same key); a refusal is not', { timeout: 60_000 }, async () => {
  const event = await f.server.createEvent();
  await onPhone(f.browser, { locale: 'en-US' }, async (page) => {
    await join(page, event, 'Retry Rita');
    const unavailable = (route) => route.fulfill({ status: 503, contentType: 'application/problem+json', headers: { 'Retry-After': '0' }, body: JSON.stringify({ status: 503, code: 'unavailable', detail: 'busy' }) });

    // The upload: its first answer is a 503; the queue sends it again with the same key.
    const posts = [];
    let failedPosts = 0;
    await page.route(`${f.server.base}/api/v1/events/${event.slug}/uploads`, (route) => {
      if (route.request().method() !== 'POST') return route.continue();
      posts.push(route.request().headers()['idempotency-key']);
      if (failedPosts++ === 0) return unavailable(route);
      return route.continue();
    });
    await choose(page, [f.photos[0]]);
    const [key] = await waitForItems(page, 1, 'done', 15_000);
    assert.equal(posts.length, 2, 'one 503, one more try');
    assert.ok(posts.every((k) => k === key), 'with the same key');

    // The gallery's page of photos: its first answer is a 503; the page asks again and shows it.
    let lists = 0;
    const listUrl = (url) => url.pathname === `/api/v1/events/${event.slug}/uploads` && url.search !== '';
    await page.route(listUrl, (route) => (lists++ === 0 ? unavailable(route) : route.continue()));
    await page.reload();
    // The page's own queue may show its finished photo first: wait for the server's list.
    await eventually(() => lists >= 2, { timeout: 10_000, what: 'the gallery asking again' });
    await page.locator('[data-testid=gallery] .tile').first().waitFor({ timeout: 10_000 });
    await page.waitForTimeout(500);
    assert.equal(lists, 2, 'the gallery asked twice, not more');

    // A refusal (a comment the server finds empty) is sent once.
    const comments = [];
    page.on('request', (r) => {
      if (r.method() === 'POST' && r.url().endsWith('/comments')) comments.push(r.url());
    });
    await page.locator('[data-testid=gallery] .tile-open').first().click();
    await page.locator('dialog.lightbox[open] input[name=text]').fill('\u200b');
    await page.locator('dialog.lightbox[open] .comment-form button[type=submit]').click();
    await page.locator('dialog.lightbox[open] [role=alert] .message').waitFor();
    await page.waitForTimeout(1500);
    assert.equal(comments.length, 1, 'not tried again');
  });
});
