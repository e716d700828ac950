// The admin page says when the last backup ran and what it holds: a warning to run one before
// the first, then the moment, the photos, their size and what was new, once `confetti backup`
// ran. Screenshots at phone (390×844) and desktop (1280×800) size.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ADMIN_TOKEN, BIN, eventually, fixtures, guestOf, onPhone, screenshot, startServer, uploadPhoto, watchConsole } from './helpers.mjs';

const f = fixtures({ server: false, photos: 3 });

async function logIn(page, server) {
  await page.goto(`${server.base}/admin`);
  await page.fill('input[name=admin_token]', ADMIN_TOKEN);
  await page.click('[data-testid=admin-login] button[type=submit]');
  await page.locator('.admin-dashboard').waitFor({ state: 'visible' });
}

test('admin page: the last backup, or a warning that none ran', { timeout: 120_000 }, async () => {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'confetti-backup-'));
  const dataDir = path.join(work, 'data');
  const server = await startServer({ name: 'backup', env: { CONFETTI_DATA_DIR: dataDir } });
  try {
    const event = await server.createEvent({ name: 'Sommerfest' });
    const guest = await guestOf(server, event, 'Ada');
    for (const photo of f.photos) await uploadPhoto(server, event, guest, photo);
    // Shown once its thumb exists (thumbs first); every derivative made: the server's counter.
    const made = async () => Number((await (await fetch(`${server.base}/metrics`)).text()).match(/^confetti_derivatives_made_total (\d+)$/m)?.[1] || 0);
    await eventually(async () => (await made()) >= f.photos.length, { what: 'thumbs and previews' });

    await onPhone(f.browser, { locale: 'en-GB' }, async (page) => {
      const problems = watchConsole(page);
      await logIn(page, server);
      const note = page.locator('[data-testid=last-backup]');
      assert.equal(await note.getAttribute('data-state'), 'none');
      assert.match(await note.textContent(), /No backup has run yet/);
      assert.deepEqual(problems, []);
    });

    execFileSync(BIN, ['backup', '--data-dir', dataDir, '--to', path.join(work, 'backup')], { env: { ...process.env, RUST_LOG: 'warn' }, stdio: 'pipe' });

    await onPhone(f.browser, { locale: 'en-GB' }, async (page) => {
      const problems = watchConsole(page);
      await logIn(page, server);
      const note = page.locator('[data-testid=last-backup]');
      assert.equal(await note.getAttribute('data-state'), 'ok');
      const text = await note.textContent();
      // Three photos, each an original and its derivatives, all copied by this first backup.
      assert.match(text, /^Last backup: .+ · 3 photos · [\d.]+ [KM]B · (\d+) files new$/, text);
      assert.ok(Number(text.match(/(\d+) files new/)[1]) >= 3 * 3, 'the originals, thumbs and previews');
      await screenshot(page, 'admin-backup-390x844');
      assert.deepEqual(problems, []);
    });
    const desktop = await f.browser.newContext({ viewport: { width: 1280, height: 800 }, locale: 'en-GB' });
    try {
      const page = await desktop.newPage();
      await logIn(page, server);
      await page.locator('[data-testid=last-backup][data-state=ok]').waitFor();
      await screenshot(page, 'admin-backup-1280x800');
    } finally {
      await desktop.close();
    }
  } finally {
    await server.stop();
    fs.rmSync(work, { recursive: true, force: true });
  }
});
