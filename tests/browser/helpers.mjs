// The browser tests' harness: a real Confetti server per test file (fresh data directory,
// SQLite by default or a fresh PostgreSQL database), Debian's Chromium through playwright-core,
// photos made by the browser's own JPEG encoder, and a few API calls to check what the server
// holds afterwards.
//
// The server binary: $CONFETTI_BIN, else <repo>/target/debug/confetti. This harness builds
// nothing: scripts/test.sh builds it first with the Rust tests (so does anyone running `node --test` here
// by hand). The browser: $CHROMIUM, else /usr/bin/chromium.

import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { before, after } from 'node:test';
import { chromium } from 'playwright-core';

const HERE = path.dirname(fileURLToPath(import.meta.url));
export const REPO = path.resolve(HERE, '..', '..');
export const BIN = process.env.CONFETTI_BIN || path.join(REPO, 'target', 'debug', 'confetti');
export const OUTPUT = path.join(HERE, 'output');
export const ADMIN_TOKEN = 'browser-test-admin-token';
export const PASSWORD = 'organiser-password';

/** A guest of `event` joined through the API: their bearer token. */
export async function guestOf(server, event, name) {
  const r = await server.call('POST', `/api/v1/events/${event.slug}/guests`, { body: { join_token: event.join_token, display_name: name } });
  if (r.status !== 201) throw new Error(`joining as ${name}: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body.token;
}

/** Uploads the photo `file` as the guest whose token is given, through the API: the new upload's id. */
export async function uploadPhoto(server, event, token, file) {
  const form = new FormData();
  form.append('file', new Blob([fs.readFileSync(file)], { type: 'image/jpeg' }), path.basename(file));
  const r = await fetch(`${server.base}/api/v1/events/${event.slug}/uploads`, { method: 'POST', headers: { Authorization: `Bearer ${token}` }, body: form });
  const body = await r.json();
  if (r.status !== 201) throw new Error(`uploading ${file}: ${r.status} ${JSON.stringify(body)}`);
  return body.id;
}

/**
 * A refusal's first line: the page's own words (messages.js `showError`), without the server's
 * sentence that follows as its second line.
 */
export function firstLine(locator) {
  return locator.evaluate((el) => el.firstChild?.textContent ?? '');
}

/** Opens a dashboard card folded to its heading (static/fold.js), as an organiser taps the heading. */
export async function unfold(card) {
  if (await card.evaluate((el) => el.classList.contains('folded'))) await card.locator('.fold-head').click();
  await card.evaluate((el) => { if (el.classList.contains('folded')) throw new Error('the card stayed folded'); });
}

fs.mkdirSync(OUTPUT, { recursive: true });

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** The backends to run a test against: SQLite always, PostgreSQL when TEST_DATABASE_URL is set. */
export function backends() {
  return process.env.TEST_DATABASE_URL ? ['sqlite', 'postgres'] : ['sqlite'];
}

function psql(url, sql) {
  execFileSync('psql', [url, '-qtAc', sql], { stdio: ['ignore', 'pipe', 'pipe'] });
}

/** A desktop-sized browser context (1280×800), in the given language. */
export function desktop(browser, { locale = 'en-GB' } = {}) {
  return browser.newContext({ viewport: { width: 1280, height: 800 }, locale });
}

/**
 * Starts `confetti serve` on a free port with a fresh data directory. `backend` 'postgres'
 * creates a fresh database on the server TEST_DATABASE_URL names (dropped again by `stop`).
 */
export async function startServer({ backend = 'sqlite', name = 'server', env = {}, demo = false } = {}) {
  if (!fs.existsSync(BIN)) throw new Error(`${BIN} is missing: run \`cargo build\` first (or set CONFETTI_BIN)`);
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'confetti-browser-'));
  let databaseUrl = null;
  let dbName = null;
  let adminUrl = null;
  if (backend === 'postgres') {
    adminUrl = process.env.TEST_DATABASE_URL;
    if (!adminUrl) throw new Error('TEST_DATABASE_URL is not set');
    dbName = `test_${Math.random().toString(16).slice(2)}${Date.now().toString(16)}`;
    psql(adminUrl, `CREATE DATABASE ${dbName}`);
    databaseUrl = `${adminUrl.replace(/\/[^/]*$/, '')}/${dbName}`;
  }
  const log = fs.openSync(path.join(OUTPUT, `${name}-${backend}.log`), 'w');
  const childEnv = {
    ...process.env,
    CONFETTI_DATA_DIR: dataDir,
    CONFETTI_PUBLIC_URL: base,
    CONFETTI_ADMIN_TOKEN: ADMIN_TOKEN,
    RUST_LOG: process.env.RUST_LOG || 'info',
    ...env,
  };
  delete childEnv.DATABASE_URL;
  if (databaseUrl) childEnv.DATABASE_URL = databaseUrl;
  // `demo`: as a fresh server starts by default, with its demo event.
  const child = spawn(BIN, ['serve', '--bind', `127.0.0.1:${port}`, ...(demo ? [] : ['--no-demo'])], {
    env: childEnv,
    stdio: ['ignore', log, log],
  });
  let exited = null;
  child.on('exit', (code) => {
    exited = code;
  });
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (exited !== null) throw new Error(`confetti exited with ${exited}; see ${path.join(OUTPUT, `${name}-${backend}.log`)}`);
    try {
      const r = await fetch(`${base}/healthz`);
      if (r.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error('confetti did not become healthy in 30 s');
    await sleep(100);
  }

  async function call(method, p, { token, body, headers = {} } = {}) {
    const r = await fetch(base + p, {
      method,
      headers: {
        ...(token ? { Authorization: `Bearer ${token}` } : {}),
        ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}),
        ...headers,
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await r.text();
    let json = null;
    try {
      json = text ? JSON.parse(text) : null;
    } catch {
      json = text;
    }
    return { status: r.status, headers: r.headers, body: json };
  }

  return {
    base,
    backend,
    call,
    /** A new event; its organiser's bearer token is `organiserToken`. */
    async createEvent({ name = 'Anna & Ben', quota } = {}) {
      const r = await call('POST', '/api/v1/events', {
        token: ADMIN_TOKEN,
        body: { name, organiser_password: PASSWORD, ...(quota !== undefined ? { guest_quota_bytes: quota } : {}) },
      });
      if (r.status !== 201) throw new Error(`create event: ${r.status} ${JSON.stringify(r.body)}`);
      const login = await call('POST', `/api/v1/events/${r.body.slug}/organiser-sessions`, { body: { password: PASSWORD } });
      return { ...r.body, organiserToken: login.body.token };
    },
    /** Every upload of the event as its organiser sees them (hidden ones included). */
    async uploads(event) {
      const items = [];
      let cursor = '';
      for (;;) {
        const r = await call('GET', `/api/v1/events/${event.slug}/uploads?limit=100${cursor ? `&cursor=${cursor}` : ''}`, { token: event.organiserToken });
        if (r.status !== 200) throw new Error(`list: ${r.status} ${JSON.stringify(r.body)}`);
        items.push(...r.body.items);
        if (!r.body.next_cursor) return items;
        cursor = r.body.next_cursor;
      }
    },
    async stop() {
      if (exited === null) {
        child.kill('SIGTERM');
        const t0 = Date.now();
        while (exited === null && Date.now() - t0 < 5000) await sleep(50);
        if (exited === null) child.kill('SIGKILL');
      }
      fs.closeSync(log);
      fs.rmSync(dataDir, { recursive: true, force: true });
      if (dbName) {
        try {
          psql(adminUrl, `DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
        } catch (e) {
          console.warn(`could not drop ${dbName}: ${e.message}`);
        }
      }
    },
  };
}

export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export function launchBrowser(extraArgs = []) {
  return chromium.launch({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium', headless: true, args: [...CHROMIUM_ARGS, ...extraArgs] });
}

/**
 * A phone-sized browser context (390×844, touch), in the given language (and time zone, if given).
 * `serviceWorkers: 'block'`: the page gets no service worker (as in a browser without one, or
 * on a plain http:// address), so the page alone sends its queue.
 */
export async function phone(browser, { locale = 'de-DE', timezoneId, serviceWorkers } = {}) {
  const context = await browser.newContext({ viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true, locale, ...(timezoneId ? { timezoneId } : {}), ...(serviceWorkers ? { serviceWorkers } : {}) });
  return context;
}

/** Collects the page's console errors and CSP violations, to assert there were none. */
export function watchConsole(page) {
  const problems = [];
  page.on('console', (m) => {
    if (m.type() === 'error' && !/Failed to load resource|net::ERR_/.test(m.text())) problems.push(m.text());
  });
  page.on('pageerror', (e) => problems.push(String(e)));
  return problems;
}

/**
 * Writes `n` distinct JPEG photos (drawn and encoded by the browser) to a temporary folder
 * and returns their paths. `noise` adds grain, which makes the files as large as a camera's.
 */
export async function makePhotos(browser, n, { prefix = 'photo', width = 800, height = 600, noise = false } = {}) {
  const context = await browser.newContext();
  const page = await context.newPage();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'confetti-photos-'));
  const files = [];
  for (let i = 0; i < n; i += 1) {
    const b64 = await page.evaluate(async ({ i, width, height, noise, seed }) => {
      const canvas = new OffscreenCanvas(width, height);
      const ctx = canvas.getContext('2d');
      const hue = (seed * 47 + i * 83) % 360;
      const g = ctx.createLinearGradient(0, 0, width, height);
      g.addColorStop(0, `hsl(${hue} 80% 60%)`);
      g.addColorStop(1, `hsl(${(hue + 120) % 360} 70% 40%)`);
      ctx.fillStyle = g;
      ctx.fillRect(0, 0, width, height);
      for (let k = 0; k < 30; k += 1) {
        ctx.fillStyle = `hsl(${(hue + k * 29) % 360} 90% ${40 + (k % 5) * 10}%)`;
        ctx.beginPath();
        ctx.arc((k * 97 + i * 31) % width, (k * 53 + i * 17) % height, 10 + ((k * 7) % 40), 0, Math.PI * 2);
        ctx.fill();
      }
      if (noise) {
        // Grain, as a phone camera has: JPEG cannot squeeze it, so the file is photo-sized.
        const img = ctx.getImageData(0, 0, width, height);
        for (let p = 0; p < img.data.length; p += 4) {
          const r = (Math.random() * 60) | 0;
          img.data[p] = Math.min(255, img.data[p] + r);
          img.data[p + 1] = Math.min(255, img.data[p + 1] + r);
        }
        ctx.putImageData(img, 0, 0);
      }
      ctx.fillStyle = 'white';
      ctx.font = `bold ${Math.round(height / 5)}px sans-serif`;
      ctx.fillText(String(i + 1), width / 2 - height / 10, height / 2 + height / 10);
      const blob = await canvas.convertToBlob({ type: 'image/jpeg', quality: 0.85 });
      const bytes = new Uint8Array(await blob.arrayBuffer());
      let s = '';
      for (let j = 0; j < bytes.length; j += 1) s += String.fromCharCode(bytes[j]);
      return btoa(s);
    }, { i, width, height, noise, seed: files.length + prefix.length * 13 + Math.floor(Math.random() * 1000) });
    const file = path.join(dir, `${prefix}-${i + 1}.jpg`);
    fs.writeFileSync(file, Buffer.from(b64, 'base64'));
    files.push(file);
  }
  await context.close();
  return files;
}

/** Opens the event's join link and joins with a display name. */
export async function join(page, event, name = 'Tante Erna') {
  await page.goto(event.join_url);
  await page.locator('input[name=display_name]').fill(name);
  await page.locator('form[data-testid=join] button[type=submit]').click();
  await page.locator('input[type=file][multiple][accept^="image"]').waitFor({ state: 'attached' });
  await page.locator('.uploader').waitFor({ state: 'visible' });
}

/** Chooses photos in the page's file input. */
export async function choose(page, files) {
  await page.locator('input[type=file][multiple][accept^="image"]').setInputFiles(files);
}

/** Waits until `n` queue items are in `state` (and returns their keys). */
export async function waitForItems(page, n, state, timeout = 30_000) {
  try {
    await page.waitForFunction(
      ({ n, state }) => document.querySelectorAll(`[data-client-upload-id][data-upload-state="${state}"]`).length === n,
      { n, state },
      { timeout },
    );
  } catch (e) {
    const now = await states(page).catch(() => 'unknown');
    throw new Error(`waiting for ${n} items ${state}: ${e.message}; items now: ${JSON.stringify(now)}`);
  }
  return page.$$eval(`[data-client-upload-id][data-upload-state="${state}"]`, (els) => els.map((e) => e.dataset.clientUploadId));
}

export function states(page) {
  return page.$$eval('[data-client-upload-id]', (els) => els.map((e) => ({ key: e.dataset.clientUploadId, state: e.dataset.uploadState, error: e.dataset.error, msg: e.querySelector('.q-msg')?.textContent })));
}

export async function screenshot(page, name) {
  const file = path.join(OUTPUT, `${name}.png`);
  await page.screenshot({ path: file, fullPage: false });
  return file;
}

/**
 * Polls `check` (async, in this process) until it returns something truthy, and returns that.
 * Page-side predicates of `page.waitForFunction` must not be async: a promise is truthy.
 */
export async function eventually(check, { timeout = 15_000, interval = 200, what = 'a condition' } = {}) {
  const deadline = Date.now() + timeout;
  let last;
  for (;;) {
    try {
      last = await check();
      if (last) return last;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; last: ${last instanceof Error ? last.message : JSON.stringify(last)}`);
    await sleep(interval);
  }
}

export function fileSize(file) {
  return fs.statSync(file).size;
}

export { sleep };

/**
 * One test file's fixtures: a browser, photos, and (unless `server` is false) one server
 * shared by the file's tests. The returned object is filled in by `before`.
 */
export function fixtures({ server = 'server', photos = 0, photoOptions = {} } = {}) {
  const f = {};
  before(async () => {
    f.browser = await launchBrowser();
    if (server) f.server = await startServer({ name: server });
    if (photos) f.photos = await makePhotos(f.browser, photos, { prefix: server || 'photo', ...photoOptions });
  });
  after(async () => {
    await f.browser?.close();
    await f.server?.stop();
  });
  return f;
}

/** Runs `fn(page, context)` in a fresh phone context that is closed afterwards. */
export async function onPhone(browser, options, fn) {
  const context = await phone(browser, options);
  try {
    return await fn(await context.newPage(), context);
  } finally {
    await context.close();
  }
}

/**
 * A TCP proxy between a client (Chromium, or a Node client) and a server, as venue Wi-Fi sits
 * between a phone and the server: it forwards both ways, counts the bytes it forwarded to the
 * server (`up`, all connections together), and can cut or hold one connection once that
 * connection has forwarded a number of bytes to the server.
 *
 * Start it before the server (`base` is known at once, for `--public-url`), then `target(port)`.
 * - `cutAt(n)`: the first connection to pass n bytes towards the server is reset, both sockets
 *   destroyed (the client sees a connection reset). Resolves with the connection's byte count.
 * - `holdAt(n)`: the first connection to pass n bytes stops being read (nothing more reaches
 *   the server; the client's sends back up). Resolves with `{bytes, release(), cut(), closed}`,
 *   `closed` a promise settled once that connection has closed.
 * Each arms once; later connections pass through.
 * - `unreachable(true)`: the server is away: every open connection is reset and new ones are
 *   refused (reset at once) until `unreachable(false)`.
 */
export async function startProxy() {
  const port = await freePort();
  let targetPort = null;
  const sockets = new Set();
  const triggers = [];
  const proxy = {
    base: `http://127.0.0.1:${port}`,
    port,
    up: 0,
    down: 0,
    connections: 0,
    target(p) {
      targetPort = Number(p);
    },
    cutAt(bytes) {
      return new Promise((resolve) => triggers.push({ bytes, kind: 'cut', resolve }));
    },
    holdAt(bytes) {
      return new Promise((resolve) => triggers.push({ bytes, kind: 'hold', resolve }));
    },
    refusing: false,
    unreachable(on) {
      proxy.refusing = on;
      if (on) for (const s of sockets) s.destroy();
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(() => r()));
    },
  };
  const server = net.createServer((client) => {
    if (proxy.refusing) {
      client.resetAndDestroy();
      return;
    }
    proxy.connections += 1;
    const upstream = net.connect(targetPort, '127.0.0.1');
    sockets.add(client);
    sockets.add(upstream);
    let forwarded = 0;
    const closed = new Promise((resolve) => client.once('close', resolve));
    const cut = () => {
      client.resetAndDestroy();
      upstream.destroy();
    };
    client.on('data', (chunk) => {
      forwarded += chunk.length;
      proxy.up += chunk.length;
      if (!upstream.write(chunk)) client.pause();
      const i = triggers.findIndex((t) => forwarded >= t.bytes);
      if (i < 0) return;
      const [t] = triggers.splice(i, 1);
      if (t.kind === 'cut') {
        cut();
        t.resolve({ bytes: forwarded });
      } else {
        client.pause();
        client.held = true;
        t.resolve({
          bytes: forwarded,
          release: () => {
            client.held = false;
            client.resume();
          },
          cut,
          closed,
        });
      }
    });
    upstream.on('drain', () => {
      if (!client.held) client.resume();
    });
    upstream.on('data', (chunk) => {
      proxy.down += chunk.length;
      client.write(chunk);
    });
    const end = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('close', end);
    upstream.on('close', end);
    client.on('error', () => {});
    upstream.on('error', () => {});
  });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', resolve);
  });
  return proxy;
}
