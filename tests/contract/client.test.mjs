// @ts-check
// A client generated from the served document (openapi-typescript's types, openapi-fetch's
// requests), type-checked by tsc against those types (scripts/contract.sh) and run here against a
// real server on SQLite and on PostgreSQL: an event, a join, an upload, a resumable upload in two
// pieces and the listing, each request exactly as the document describes it.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import createClient from 'openapi-fetch';
import { ADMIN_TOKEN, backends, startServer } from './server.mjs';

/** @typedef {import('./generated/api.js').paths} paths */

/**
 * A client for the document's operations, as `token` (or nobody).
 * @param {string} baseUrl
 * @param {string} [token]
 * @returns {import('openapi-fetch').Client<paths>}
 */
function client(baseUrl, token) {
  return createClient({ baseUrl, headers: token ? { Authorization: `Bearer ${token}` } : {} });
}

/** A real JPEG, made by Debian's ffmpeg (which the server needs anyway). */
function photo() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'confetti-contract-photo-'));
  const file = path.join(dir, 'photo.jpg');
  execFileSync('ffmpeg', ['-loglevel', 'error', '-f', 'lavfi', '-i', 'testsrc=size=320x240', '-frames:v', '1', file]);
  const bytes = fs.readFileSync(file);
  fs.rmSync(dir, { recursive: true, force: true });
  return bytes;
}

/** @param {string} text */
const base64 = (text) => Buffer.from(text).toString('base64');

/**
 * Bytes where the document says `string` (binary content, `contentMediaType`), sent as they are:
 * openapi-fetch would write them as JSON.
 * @param {unknown} body
 */
const raw = (body) => /** @type {string} */ (body);

for (const backend of backends()) {
  test(`a generated client joins, uploads, uploads resumably and lists (${backend})`, { timeout: 120_000 }, async () => {
    const server = await startServer({ backend, name: 'client' });
    try {
      const admin = client(server.base, ADMIN_TOKEN);
      const created = await admin.POST('/api/v1/events', { body: { name: 'Anna & Ben', organiser_password: 'correct horse' } });
      assert.equal(created.response.status, 201, JSON.stringify(created.error));
      assert.ok(created.data);
      const { slug, join_token } = created.data;

      const anonymous = client(server.base);
      const shown = await anonymous.GET('/api/v1/events/{slug}', { params: { path: { slug } } });
      assert.equal(shown.response.status, 200);
      assert.ok(shown.data && !('join_token' in shown.data), 'the public view has no join token');

      // Join.
      const joined = await anonymous.POST('/api/v1/events/{slug}/guests', {
        params: { path: { slug } },
        body: { join_token, display_name: 'Anna' },
      });
      assert.equal(joined.response.status, 201, JSON.stringify(joined.error));
      assert.ok(joined.data);
      const guest = client(server.base, joined.data.token);
      const wrong = await anonymous.POST('/api/v1/events/{slug}/guests', {
        params: { path: { slug } },
        body: { join_token: 'not-the-token', display_name: 'Eve' },
      });
      assert.equal(wrong.error?.code, 'invalid_join_token', 'a refusal is the documented problem');

      // A one-request upload, keyed.
      const bytes = photo();
      const key = randomUUID();
      const uploaded = await guest.POST('/api/v1/events/{slug}/uploads', {
        params: { path: { slug } },
        body: { client_upload_id: key, caption: 'Der Tanz', file: 'photo.jpg' },
        bodySerializer: (body) => {
          const form = new FormData();
          form.append('client_upload_id', body.client_upload_id ?? '');
          form.append('caption', body.caption ?? '');
          form.append('file', new Blob([bytes], { type: 'image/jpeg' }), body.file);
          return form;
        },
      });
      assert.equal(uploaded.response.status, 201, JSON.stringify(uploaded.error));
      assert.ok(uploaded.data);
      assert.equal(uploaded.data.client_upload_id, key);
      assert.equal(uploaded.data.bytes, bytes.length);

      // A resumable upload: created empty, then two appends at the offsets the server names.
      const resumableKey = randomUUID();
      const half = Math.floor(bytes.length / 2);
      const resource = await guest.POST('/api/v1/events/{slug}/uploads/resumable', {
        params: {
          path: { slug },
          header: {
            'Upload-Metadata': `client_upload_id ${base64(resumableKey)},filename ${base64('resumed.jpg')}`,
            'Upload-Length': bytes.length,
          },
        },
      });
      assert.equal(resource.response.status, 201, JSON.stringify(resource.error));
      assert.ok(resource.data && 'offset' in resource.data, 'an upload resource');
      assert.equal(resource.response.headers.get('upload-complete'), '?0');
      const id = resource.data.id;
      const resumable = { path: { slug, id } };
      const first = await guest.PATCH('/api/v1/events/{slug}/uploads/resumable/{id}', {
        params: { ...resumable, header: { 'Upload-Offset': 0, 'Upload-Complete': '?0' } },
        headers: { 'Content-Type': 'application/partial-upload' },
        body: raw(bytes.subarray(0, half)),
        bodySerializer: (body) => body,
      });
      assert.equal(first.response.status, 204, JSON.stringify(first.error));
      const offset = await guest.HEAD('/api/v1/events/{slug}/uploads/resumable/{id}', { params: resumable });
      assert.equal(offset.response.headers.get('upload-offset'), String(half));
      const stale = await guest.PATCH('/api/v1/events/{slug}/uploads/resumable/{id}', {
        params: { ...resumable, header: { 'Upload-Offset': 0 } },
        headers: { 'Content-Type': 'application/partial-upload' },
        body: raw(bytes.subarray(0, 1)),
        bodySerializer: (body) => body,
      });
      assert.equal(stale.error?.code, 'upload_offset_mismatch');
      const last = await guest.PATCH('/api/v1/events/{slug}/uploads/resumable/{id}', {
        params: { ...resumable, header: { 'Upload-Offset': half, 'Upload-Complete': '?1' } },
        headers: { 'Content-Type': 'application/partial-upload' },
        body: raw(bytes.subarray(half)),
        bodySerializer: (body) => body,
      });
      assert.equal(last.response.status, 201, JSON.stringify(last.error));
      assert.ok(last.data);
      assert.equal(last.data.client_upload_id, resumableKey);
      assert.equal(last.data.filename, 'resumed.jpg');
      assert.equal(last.data.bytes, bytes.length);

      // A resumable creation that carries the whole file answers the Upload.
      const whole = await guest.POST('/api/v1/events/{slug}/uploads/resumable', {
        params: {
          path: { slug },
          header: { 'Upload-Metadata': `client_upload_id ${base64(randomUUID())}`, 'Upload-Complete': '?1' },
        },
        headers: { 'Content-Type': 'application/octet-stream' },
        body: raw(bytes),
        bodySerializer: (body) => body,
      });
      assert.equal(whole.response.status, 201, JSON.stringify(whole.error));
      assert.ok(whole.data && 'sha256' in whole.data, 'the stored Upload');

      // The listing, a page at a time.
      const page = await guest.GET('/api/v1/events/{slug}/uploads', { params: { path: { slug }, query: { limit: 2 } } });
      assert.equal(page.response.status, 200);
      assert.ok(page.data);
      assert.equal(page.data.items.length, 2);
      assert.ok(page.data.next_cursor);
      const rest = await guest.GET('/api/v1/events/{slug}/uploads', {
        params: { path: { slug }, query: { limit: 2, cursor: page.data.next_cursor } },
      });
      assert.ok(rest.data);
      const ids = [...page.data.items, ...rest.data.items].map((u) => u.id);
      assert.deepEqual(new Set(ids), new Set([uploaded.data.id, last.data.id, whole.data.id]), 'every upload once, newest first');
      assert.equal(rest.data.next_cursor, null);
    } finally {
      await server.stop();
    }
  });
}
