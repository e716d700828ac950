// The answer to an upload is lost after the server committed it (Chromium's own network
// stack fails the request at the response stage, through CDP): the page retries with the
// same key, learns from the preflight that the server has the photo, and marks it done —
// three photos, three rows, the quota charged once for each, the lost one's bytes not re-sent.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fixtures, onPhone, startServer, join, choose, waitForItems, fileSize, backends } from './helpers.mjs';

const f = fixtures({ server: false, photos: 3, photoOptions: { prefix: 'lost' } });

for (const backend of backends()) {
  test(`${backend}: a lost response after the commit ends done, stored and charged once`, { timeout: 90_000 }, async () => {
    const server = await startServer({ backend, name: 'lost-response' });
    try {
      const event = await server.createEvent();
      await onPhone(f.browser, { locale: 'en-GB' }, async (page, context) => {
        await join(page, event, 'Cousin Max');

        const posts = [];
        const preflights = [];
        page.on('request', (r) => {
          if (r.method() === 'POST' && r.url().endsWith('/uploads')) posts.push(r.headers()['idempotency-key']);
          if (r.url().includes('/uploads/by-client-id/')) preflights.push(r.url().split('/').pop());
        });

        const cdp = await context.newCDPSession(page);
        await cdp.send('Fetch.enable', { patterns: [{ urlPattern: `*/api/v1/events/${event.slug}/uploads`, requestStage: 'Response' }] });
        let lostKey = null;
        let lostStatus = null;
        cdp.on('Fetch.requestPaused', async (e) => {
          try {
            if (e.request.method === 'POST' && lostKey === null) {
              lostKey = e.request.headers['Idempotency-Key'] ?? e.request.headers['idempotency-key'];
              lostStatus = e.responseStatusCode;
              await cdp.send('Fetch.failRequest', { requestId: e.requestId, errorReason: 'ConnectionReset' });
            } else {
              await cdp.send('Fetch.continueRequest', { requestId: e.requestId });
            }
          } catch (err) {
            console.warn('CDP', err.message);
          }
        });

        await choose(page, f.photos);
        const keys = await waitForItems(page, 3, 'done', 45_000);
        assert.ok(lostKey, 'one response was lost');
        assert.equal(lostStatus, 201, 'the server had stored the photo whose answer was lost');
        assert.ok(keys.includes(lostKey), 'the photo whose answer was lost ends done');

        const rows = await server.uploads(event);
        assert.equal(rows.length, 3, 'three rows, not four');
        assert.deepEqual(new Set(rows.map((r) => r.client_upload_id)), new Set(keys));
        const total = f.photos.reduce((s, f) => s + fileSize(f), 0);
        const me = await page.evaluate(() => fetch('/api/v1/me').then((r) => r.json()));
        assert.equal(me.used_bytes, total, 'quota charged once per photo');
        assert.equal(me.upload_count, 3);

        // The retry asked first and did not send the bytes again.
        assert.ok(preflights.includes(lostKey), 'the retry asked the by-client-id preflight');
        assert.equal(posts.filter((k) => k === lostKey).length, 1, 'the lost photo was POSTed once');
        assert.equal(posts.length, 3);
        const state = await page.textContent(`[data-client-upload-id="${lostKey}"] .q-state`);
        assert.equal(state, 'Already uploaded');
      });
    } finally {
      await server.stop();
    }
  });
}
