// A benchmark, not a test: the guest's first and return visit to a join link on Chromium's
// "Slow 4G" profile (CDP Network.emulateNetworkConditions: 562.5 ms latency, 1.44 Mbit/s down,
// 675 kbit/s up — DevTools' preset), against a fresh server (SQLite). Prints, as the median of
// RUNS fresh browser profiles: the time from navigation to the name form being visible, the
// bytes that crossed the network for the first visit, and for the return visit (a new
// navigation in the same profile) how many requests reached the server at all.
//
//   cd tests/browser && node bench/first-visit.mjs   (after `cargo build`)

import { launchBrowser, startServer } from '../helpers.mjs';

const RUNS = Number(process.env.RUNS || 5);
const SLOW_4G = { offline: false, latency: 562.5, downloadThroughput: (1.6 * 1024 * 1024 / 8) * 0.9, uploadThroughput: (750 * 1024 / 8) * 0.9 };

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const server = await startServer({ name: 'bench-first-visit' });
const browser = await launchBrowser();
const results = [];
try {
  const event = await server.createEvent({ name: 'Sommerfest am See' });
  for (let run = 0; run < RUNS; run += 1) {
    const context = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, deviceScaleFactor: 2, locale: 'de-DE' });
    const page = await context.newPage();
    const cdp = await context.newCDPSession(page);
    await cdp.send('Network.enable');
    await cdp.send('Network.emulateNetworkConditions', SLOW_4G);
    let bytes = 0;
    // A request reached the server when bytes crossed the network for it (a 304 has headers).
    const reached = new Set();
    const urls = new Map();
    cdp.on('Network.requestWillBeSent', (e) => urls.set(e.requestId, new URL(e.request.url).pathname));
    cdp.on('Network.responseReceived', (e) => urls.set(e.requestId, `${e.response.status} ${new URL(e.response.url).pathname}`));
    cdp.on('Network.loadingFinished', (e) => {
      bytes += e.encodedDataLength;
      if (e.encodedDataLength > 0) reached.add(urls.get(e.requestId));
    });
    const t0 = Date.now();
    await page.goto(event.join_url, { waitUntil: 'commit' });
    await page.locator('input[name=display_name]').waitFor({ state: 'visible', timeout: 180_000 });
    const firstMs = Date.now() - t0;
    await page.waitForLoadState('networkidle');
    const firstBytes = bytes;
    const firstRequests = reached.size;

    // Return visit: the same link again in this profile.
    reached.clear();
    bytes = 0;
    const t1 = Date.now();
    await page.goto(event.join_url, { waitUntil: 'commit' });
    await page.locator('input[name=display_name]').waitFor({ state: 'visible', timeout: 180_000 });
    const returnMs = Date.now() - t1;
    await page.waitForLoadState('networkidle');
    const returnStatic = [...reached].filter((r) => r.includes('/static/'));
    results.push({ firstMs, firstBytes, firstRequests, returnMs, returnBytes: bytes, returnRequests: reached.size, returnStatic: returnStatic.length, returned: [...reached] });
    await context.close();
  }
} finally {
  await browser.close();
  await server.stop();
}
const pick = (k) => median(results.map((r) => r[k]));
console.log(JSON.stringify({
  runs: RUNS,
  first_visit_ms: pick('firstMs'),
  first_visit_bytes: pick('firstBytes'),
  first_visit_requests: pick('firstRequests'),
  return_visit_ms: pick('returnMs'),
  return_visit_bytes: pick('returnBytes'),
  return_visit_requests: pick('returnRequests'),
  return_visit_static_requests: pick('returnStatic'),
  all_first_ms: results.map((r) => r.firstMs),
  return_requests_last_run: results.at(-1).returned,
}, null, 1));
