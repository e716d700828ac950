// Lighter galleries, as a guest on a phone sees them: while a thumb is slow to arrive its tile
// draws the photo's placeholder (the Upload's ThumbHash, decoded by static/thumbhash.js), and
// the thumb that then arrives is the WebP the browser asked for.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { backends, startServer, launchBrowser, makePhotos, onPhone, screenshot, join, guestOf, uploadPhoto, eventually, watchConsole } from './helpers.mjs';

for (const backend of backends()) {
  test(`the placeholder is drawn before the thumb arrives, then the AVIF thumb (${backend})`, { timeout: 90_000 }, async () => {
    const browser = await launchBrowser();
    const server = await startServer({ backend, name: 'placeholder' });
    try {
      // A photo with colours of its own: a placeholder of it is not the page's grey.
      const [photo] = await makePhotos(browser, 1, { prefix: 'placeholder', width: 900, height: 600, noise: true });
      const event = await server.createEvent();
      const anna = await guestOf(server, event, 'Anna');
      const id = await uploadPhoto(server, event, anna, photo);
      const ready = await eventually(async () => (await server.uploads(event)).find((u) => u.id === id && u.status === 'ready'), { what: 'the derivatives' });
      assert.match(ready.placeholder, /^[A-Za-z0-9+/]+=*$/, 'the Upload carries its placeholder');
      // Thumbs first: `ready` comes with the JPEG thumb; the AVIF thumb is made after, with the
      // preview, whose URL answers 307 (to the thumb) until then.
      const previewMade = async () => (await fetch(`${server.base}/api/v1/uploads/${id}/preview`, { headers: { Authorization: `Bearer ${event.organiserToken}` }, redirect: 'manual' })).status === 200;
      await eventually(previewMade, { what: 'the preview and the AVIF thumb' });

      await onPhone(browser, { locale: 'en-US' }, async (page) => {
        const problems = watchConsole(page);
        // Thumbs are held back until the test lets them through.
        let release;
        const released = new Promise((resolve) => { release = resolve; });
        const thumbs = [];
        await page.route('**/api/v1/uploads/*/thumb', async (route) => {
          await released;
          const response = await route.fetch();
          thumbs.push({ accept: route.request().headers().accept, type: response.headers()['content-type'], vary: response.headers().vary });
          await route.fulfill({ response });
        });
        await join(page, event, 'Ben');
        const selector = `[data-testid=gallery] .tile[data-upload-id="${id}"] img`;
        const img = page.locator(selector);
        // Read in one go: the live stream may draw the tile again meanwhile.
        const drawn = await (await page.waitForFunction((sel) => {
          const el = document.querySelector(sel);
          const background = el && el.isConnected ? getComputedStyle(el).backgroundImage : '';
          return background.startsWith('url(') ? { background, state: el.dataset.placeholder, width: el.naturalWidth } : null;
        }, selector)).jsonValue();
        const { background } = drawn;
        assert.equal(drawn.state, 'drawn');
        assert.match(background, /^url\("data:image\/png;base64,/, 'the decoded placeholder is the tile\'s background');
        assert.equal(drawn.width, 0, 'the thumb has not arrived yet');
        // The placeholder's pixels are the photo's colours, not one flat colour.
        const colours = await page.evaluate(async (url) => {
          const image = new Image();
          image.src = url;
          await image.decode();
          const canvas = new OffscreenCanvas(image.width, image.height);
          const ctx = canvas.getContext('2d');
          ctx.drawImage(image, 0, 0);
          const { data } = ctx.getImageData(0, 0, image.width, image.height);
          const seen = new Set();
          for (let i = 0; i < data.length; i += 4) seen.add(`${data[i] >> 4},${data[i + 1] >> 4},${data[i + 2] >> 4}`);
          return { width: image.width, height: image.height, distinct: seen.size };
        }, background.slice(5, -2));
        assert.ok(colours.width > colours.height, `a landscape photo's placeholder is landscape: ${JSON.stringify(colours)}`);
        assert.ok(colours.distinct > 3, `more than a flat colour: ${JSON.stringify(colours)}`);
        await screenshot(page, 'placeholder-while-the-thumb-loads-390x844');

        release();
        await page.waitForFunction((sel) => {
          const el = document.querySelector(sel);
          return el && el.naturalWidth > 0 && el.dataset.placeholder === 'done';
        }, `[data-testid=gallery] .tile[data-upload-id="${id}"] img`);
        assert.equal(await img.evaluate((el) => getComputedStyle(el).backgroundImage), 'none', 'the placeholder goes once the thumb is there');
        // Once, or twice when the tile was drawn again while its first request was held back.
        assert.ok(thumbs.length >= 1 && thumbs.length <= 2, JSON.stringify(thumbs));
        for (const thumb of thumbs) {
          assert.match(thumb.accept, /image\/avif/, 'Chromium lists AVIF for images');
          assert.equal(thumb.type, 'image/avif');
          assert.equal(thumb.vary, 'Accept');
        }
        await screenshot(page, 'placeholder-thumb-arrived-390x844');
        assert.deepEqual(problems, []);
      });
    } finally {
      await browser.close();
      await server.stop();
    }
  });
}
