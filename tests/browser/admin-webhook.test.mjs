// The admin's webhook card: an address that is not http(s) is refused before anything is sent;
// a saved webhook shows its secret once; a test call reaches the receiver, signed; a photo
// waiting for review makes a call with the count; the card says how the last call went; removing
// it forgets it.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import http from 'node:http';
import { ADMIN_TOKEN, backends, desktop, eventually, fixtures, makePhotos, onPhone, screenshot, startServer, uploadPhoto, guestOf, watchConsole } from './helpers.mjs';

const f = fixtures({ server: false });

/** A receiver on a free port that keeps every POST it gets and answers 204. */
async function receiver() {
  const got = [];
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      got.push({ headers: req.headers, body: Buffer.concat(chunks) });
      res.writeHead(204).end();
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${server.address().port}/hook`, got, close: () => server.close() };
}

function verified(delivery, secret) {
  const ts = delivery.headers['x-confetti-timestamp'];
  const mac = crypto.createHmac('sha256', secret).update(`${ts}.`).update(delivery.body).digest('hex');
  assert.equal(delivery.headers['x-confetti-signature'], `sha256=${mac}`, 'the signature verifies');
  return JSON.parse(delivery.body.toString('utf8'));
}

for (const backend of backends()) {
  test(`${backend}: admin page: set, test and remove the webhook`, { timeout: 120_000 }, async () => {
    const hook = await receiver();
    const server = await startServer({ backend, name: 'admin-webhook', env: { CONFETTI_WEBHOOK_DELAY_S: '1' } });
    try {
      const event = await server.createEvent({ name: 'Sommerfest' });
      await server.call('PATCH', `/api/v1/events/${event.slug}`, { token: event.organiserToken, body: { review_uploads: true } });
      await onPhone(f.browser, { locale: 'en-GB' }, async (page) => {
        const problems = watchConsole(page);
        await page.goto(`${server.base}/admin`);
        await page.fill('input[name=admin_token]', ADMIN_TOKEN);
        await page.click('[data-testid=admin-login] button[type=submit]');
        const card = page.locator('[data-testid=webhook]');
        await card.locator('[data-testid=webhook-state][data-state=none]').waitFor();
        assert.equal(await card.locator('[data-testid=webhook-state]').textContent(), 'No webhook set.');
        assert.equal(await card.locator('button[data-action=webhook-test]').isVisible(), false, 'nothing to test yet');

        await card.locator('input[name=webhook_url]').fill('ftp://example.org/hook');
        await card.locator('button[type=submit]').click();
        await card.locator('.error', { hasText: 'http://' }).waitFor();
        assert.equal((await server.call('GET', '/api/v1/admin/webhook', { token: ADMIN_TOKEN })).status, 404, 'nothing was sent');

        await card.locator('input[name=webhook_url]').fill(hook.url);
        await card.locator('button[type=submit]').click();
        const secret = await card.locator('[data-testid=webhook-secret-value]').textContent();
        assert.match(secret, /^whsec_/);
        await card.locator('[data-testid=webhook-state][data-state=idle]').waitFor();
        await screenshot(page, `admin-webhook-${backend}-390x844`);

        await card.locator('button[data-action=webhook-test]').click();
        await page.locator('.note', { hasText: 'The test arrived (HTTP 204)' }).waitFor();
        await card.locator('[data-testid=webhook-state][data-state=ok]').waitFor();
        assert.equal(verified(hook.got[0], secret).test, true);

        // A photo waiting for review: one call with the count.
        const guestToken = await guestOf(server, event, 'Ann');
        const [photo] = await makePhotos(f.browser, 1, { prefix: `webhook-${backend}` });
        await uploadPhoto(server, event, guestToken, photo);
        const delivery = await eventually(() => hook.got[1], { timeout: 20_000, what: 'the webhook call' });
        const body = verified(delivery, secret);
        assert.equal(body.waiting, 1);
        assert.equal(body.event.slug, event.slug);
        await page.reload();
        await card.locator('[data-testid=webhook-state][data-state=ok]').waitFor();
        assert.match(await card.locator('[data-testid=webhook-state]').textContent(), /Last delivered: .* \(HTTP 204\)/);
        assert.equal(await card.locator('input[name=webhook_url]').inputValue(), hook.url);
        assert.equal(await card.locator('[data-testid=webhook-secret]').isVisible(), false, 'the secret is shown once');

        await card.locator('button[data-action=webhook-remove]').click();
        await card.locator('[data-testid=webhook-state][data-state=none]').waitFor();
        assert.equal((await server.call('GET', '/api/v1/admin/webhook', { token: ADMIN_TOKEN })).status, 404);
        assert.deepEqual(problems, []);
      });

      // The card on a desktop, in German, with a failing receiver.
      await server.call('PUT', '/api/v1/admin/webhook', { token: ADMIN_TOKEN, body: { url: 'http://127.0.0.1:9/hook' } });
      await server.call('POST', '/api/v1/admin/webhook/test', { token: ADMIN_TOKEN });
      const context = await desktop(f.browser, { locale: 'de-DE' });
      try {
        const page = await context.newPage();
        await page.goto(`${server.base}/admin`);
        await page.fill('input[name=admin_token]', ADMIN_TOKEN);
        await page.click('[data-testid=admin-login] button[type=submit]');
        const card = page.locator('[data-testid=webhook]');
        await card.locator('[data-testid=webhook-state][data-state=failed]').waitFor();
        assert.match(await card.locator('[data-testid=webhook-state]').textContent(), /fehlgeschlagen: could not connect: .*refused/i);
        await card.scrollIntoViewIfNeeded();
        await screenshot(page, `admin-webhook-${backend}-1280x800`);
      } finally {
        await context.close();
      }
    } finally {
      hook.close();
      await server.stop();
    }
  });
}
