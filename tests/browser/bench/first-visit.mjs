// A benchmark, not a test: the guest's first and return visit to a join link on Chromium's
// "Slow 4G" profile (CDP Network.emulateNetworkConditions: 562.5 ms latency, 1.44 Mbit/s down,
// 675 kbit/s up — DevTools' preset), against a fresh server (SQLite). Prints, as the median of
// RUNS fresh browser profiles: the time from navigation to the name form being visible, the
// bytes that crossed the network for the first visit, and for the return visit (a new
// navigation in the same profile) how many requests reached the server at all.
//
//   cd tests/browser && node bench/first-visit.mjs   (after `cargo build`)
//
// `VIA=caddy` measures the recommended set-up instead: Caddy with deploy/Caddyfile in front
// (HTTPS with its local CA, so HTTP/2: the page's files come over one connection at once),
// where plain HTTP gives the browser six connections and one file per connection at a time.

import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { launchBrowser, startServer, REPO } from '../helpers.mjs';

const RUNS = Number(process.env.RUNS || 5);
const SLOW_4G = { offline: false, latency: 562.5, downloadThroughput: (1.6 * 1024 * 1024 / 8) * 0.9, uploadThroughput: (750 * 1024 / 8) * 0.9 };

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const port = () => new Promise((resolve) => {
  const srv = net.createServer().listen(0, '127.0.0.1', () => {
    const { port: p } = srv.address();
    srv.close(() => resolve(p));
  });
});

/** Caddy with the deployment's Caddyfile in front of `base`; its https origin. */
async function caddyBefore(base) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'confetti-caddy-'));
  const [https, http, admin] = [await port(), await port(), await port()];
  const child = spawn('caddy', ['run', '--adapter', 'caddyfile', '--config', path.join(REPO, 'deploy/Caddyfile')], {
    env: { PATH: process.env.PATH, HOME: dir, XDG_DATA_HOME: `${dir}/data`, XDG_CONFIG_HOME: `${dir}/config`, CONFETTI_DOMAIN: `https://localhost:${https}`, CONFETTI_TLS: 'internal', CONFETTI_UPSTREAM: new URL(base).host, CONFETTI_HTTP_PORT: String(http), CONFETTI_CADDY_ADMIN: `127.0.0.1:${admin}` },
    stdio: 'ignore',
  });
  const origin = `https://localhost:${https}`;
  for (let i = 0; i < 300; i += 1) {
    if (await new Promise((resolve) => net.connect(https, '127.0.0.1').on('connect', function () { this.end(); resolve(true); }).on('error', () => resolve(false)))) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  await new Promise((r) => setTimeout(r, 1000));
  return { origin, stop: () => child.kill() };
}

const server = await startServer({ name: 'bench-first-visit' });
const caddy = process.env.VIA === 'caddy' ? await caddyBefore(server.base) : null;
const browser = await launchBrowser();
const results = [];
try {
  const event = await server.createEvent({ name: 'Sommerfest am See' });
  if (caddy) event.join_url = event.join_url.replace(server.base, caddy.origin);
  for (let run = 0; run < RUNS; run += 1) {
    const context = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, deviceScaleFactor: 2, locale: 'de-DE', ignoreHTTPSErrors: Boolean(caddy) });
    const page = await context.newPage();
    const cdp = await context.newCDPSession(page);
    await cdp.send('Network.enable');
    await cdp.send('Network.emulateNetworkConditions', SLOW_4G);
    let bytes = 0;
    let t0 = Date.now();
    // A request reached the server when bytes crossed the network for it (a 304 has headers).
    const reached = new Set();
    const urls = new Map();
    cdp.on('Network.requestWillBeSent', (e) => urls.set(e.requestId, new URL(e.request.url).pathname));
    cdp.on('Network.responseReceived', (e) => urls.set(e.requestId, `${e.response.status} ${new URL(e.response.url).pathname}`));
    const started = new Map();
    const waterfall = [];
    cdp.on('Network.requestWillBeSent', (e) => started.set(e.requestId, Date.now()));
    cdp.on('Network.loadingFinished', (e) => {
      if (process.env.WATERFALL && run === 0) waterfall.push(`${String(started.get(e.requestId) - t0).padStart(5)} → ${String(Date.now() - t0).padStart(5)} ms ${String(e.encodedDataLength).padStart(6)} B ${urls.get(e.requestId)}`);
      bytes += e.encodedDataLength;
      if (e.encodedDataLength > 0) reached.add(urls.get(e.requestId));
    });
    t0 = Date.now();
    await page.goto(event.join_url, { waitUntil: 'commit' });
    await page.locator('input[name=display_name]').waitFor({ state: 'visible', timeout: 180_000 });
    const firstMs = Date.now() - t0;
    // The page's modules have taken the form over (the server's first-visit form is marked
    // `data-first-visit`): the button sends from here on.
    await page.locator('section.join:not([data-first-visit]) form.join-form button:not([disabled])').waitFor({ state: 'visible', timeout: 180_000 });
    const usableMs = Date.now() - t0;
    if (process.env.WATERFALL && run === 0) console.log(`form visible at ${firstMs} ms, usable at ${usableMs} ms\n${waterfall.join('\n')}`);
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
    results.push({ firstMs, usableMs, firstBytes, firstRequests, returnMs, returnBytes: bytes, returnRequests: reached.size, returnStatic: returnStatic.length, returned: [...reached] });
    await context.close();
  }
} finally {
  await browser.close();
  caddy?.stop();
  await server.stop();
}
const pick = (k) => median(results.map((r) => r[k]));
console.log(JSON.stringify({
  runs: RUNS,
  via: caddy ? 'caddy (https, http/2)' : 'plain http/1.1',
  first_visit_ms: pick('firstMs'),
  first_visit_usable_ms: pick('usableMs'),
  first_visit_bytes: pick('firstBytes'),
  first_visit_requests: pick('firstRequests'),
  return_visit_ms: pick('returnMs'),
  return_visit_bytes: pick('returnBytes'),
  return_visit_requests: pick('returnRequests'),
  return_visit_static_requests: pick('returnStatic'),
  all_first_ms: results.map((r) => r.firstMs),
  all_usable_ms: results.map((r) => r.usableMs),
  return_requests_last_run: results.at(-1).returned,
}, null, 1));
