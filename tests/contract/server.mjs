// A real Confetti server for the contract tests: `confetti serve` on a free port with a fresh
// data directory, on SQLite or on a fresh PostgreSQL database on the server TEST_DATABASE_URL
// names. The binary: $CONFETTI_BIN, else <repo>/target/debug/confetti (scripts/test.sh builds it).

import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
export const BIN = process.env.CONFETTI_BIN || path.join(HERE, '..', '..', 'target', 'debug', 'confetti');
export const ADMIN_TOKEN = 'contract-test-admin-token';
export const OUTPUT = path.join(HERE, 'output');

/** @returns {Promise<number>} */
function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const address = srv.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

/** The backends to run against: SQLite always, PostgreSQL when TEST_DATABASE_URL is set. */
export function backends() {
  return process.env.TEST_DATABASE_URL ? ['sqlite', 'postgres'] : ['sqlite'];
}

/**
 * Starts a server; `stop()` ends it and drops its database.
 * @param {{ backend?: string, name?: string }} options
 * @returns {Promise<{ base: string, stop: () => Promise<void> }>}
 */
export async function startServer({ backend = 'sqlite', name = 'server' } = {}) {
  if (!fs.existsSync(BIN)) throw new Error(`${BIN} is missing: build it first (cargo test --no-run) or set CONFETTI_BIN`);
  fs.mkdirSync(OUTPUT, { recursive: true });
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'confetti-contract-'));
  const adminUrl = process.env.TEST_DATABASE_URL;
  /** @type {string | null} */
  let dbName = null;
  /** @type {Record<string, string | undefined>} */
  const env = { ...process.env, CONFETTI_DATA_DIR: dataDir, CONFETTI_PUBLIC_URL: base, CONFETTI_ADMIN_TOKEN: ADMIN_TOKEN, CONFETTI_MIN_FREE_BYTES: '0' };
  delete env.DATABASE_URL;
  if (backend === 'postgres') {
    if (!adminUrl) throw new Error('TEST_DATABASE_URL is not set');
    dbName = `test_contract_${Math.random().toString(16).slice(2)}`;
    execFileSync('psql', [adminUrl, '-qtAc', `CREATE DATABASE ${dbName}`]);
    env.DATABASE_URL = `${adminUrl.replace(/\/[^/]*$/, '')}/${dbName}`;
  }
  const log = fs.openSync(path.join(OUTPUT, `${name}-${backend}.log`), 'w');
  const child = spawn(BIN, ['serve', '--bind', `127.0.0.1:${port}`, '--no-demo'], { env, stdio: ['ignore', log, log] });
  /** @type {number | null} */
  let exited = null;
  child.on('exit', (code) => { exited = code ?? -1; });
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (exited !== null) throw new Error(`confetti exited with ${exited}; see ${OUTPUT}/${name}-${backend}.log`);
    try {
      if ((await fetch(`${base}/healthz`)).ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error('confetti did not become healthy in 30 s');
    await new Promise((r) => setTimeout(r, 100));
  }
  async function stop() {
    if (exited === null) {
      const gone = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await Promise.race([gone, new Promise((r) => setTimeout(r, 10_000))]);
      if (exited === null) child.kill('SIGKILL');
    }
    fs.rmSync(dataDir, { recursive: true, force: true });
    if (dbName && adminUrl) execFileSync('psql', [adminUrl, '-qtAc', `DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`]);
  }
  return { base, stop };
}
