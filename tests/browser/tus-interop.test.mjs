// Confetti's resumable uploads with a client nobody wrote for it: tus-js-client 4.3.1 in Node,
// speaking the IETF drafts it knows (`ietf-draft-05`, interop version 6, and `ietf-draft-03`,
// interop version 5), as a guest with their bearer token. (i) A whole upload in 1 MiB pieces ends
// as exactly one stored upload with the file's bytes. (ii) An upload stopped after a few pieces
// is started again from its address: the client asks the server's offset and sends only the
// rest (counted by a proxy in front of the server), and it still ends as one upload.

import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { Upload } from 'tus-js-client';
import { startServer, startProxy, guestOf, backends, OUTPUT } from './helpers.mjs';

const CHUNK = 1024 * 1024;
let video;

before(() => {
  // About 9 MB of H.264 (noise does not compress), fast start: a real video a phone could send.
  const file = path.join(OUTPUT, 'tus-interop.mp4');
  execFileSync('ffmpeg', [
    '-hide_banner', '-loglevel', 'error', '-y',
    '-f', 'lavfi', '-i', 'color=c=gray:s=640x480:r=25,noise=alls=60:allf=t',
    '-t', '2', '-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p', '-movflags', '+faststart', file,
  ]);
  const bytes = fs.readFileSync(file);
  video = { file, bytes, sha256: crypto.createHash('sha256').update(bytes).digest('hex') };
  assert.ok(bytes.length > 6 * CHUNK, `the video is ${bytes.length} bytes`);
});

/** A server behind a counting proxy, an event and a guest's bearer token. */
async function setUp(backend, name) {
  const proxy = await startProxy();
  const server = await startServer({ backend, name, env: { CONFETTI_PUBLIC_URL: proxy.base } });
  proxy.target(new URL(server.base).port);
  const event = await server.createEvent();
  const token = await guestOf(server, event, 'Tus');
  const endpoint = `${proxy.base}/api/v1/events/${event.slug}/uploads/resumable`;
  return { proxy, server, event, token, endpoint };
}

/** Runs a tus upload to its end (or until `stopAfterChunks` pieces were accepted, then aborts it). */
function run(options, { stopAfterChunks } = {}) {
  return new Promise((resolve, reject) => {
    let chunks = 0;
    let response = null;
    const upload = new Upload(video.bytes, {
      chunkSize: CHUNK,
      retryDelays: null,
      ...options,
      onChunkComplete: () => {
        chunks += 1;
        if (stopAfterChunks && chunks >= stopAfterChunks) {
          upload.abort().then(() => resolve({ url: upload.url, aborted: true, chunks }), reject);
        }
      },
      onSuccess: ({ lastResponse }) => {
        response = lastResponse;
        resolve({ url: upload.url, aborted: false, chunks, status: response.getStatus(), body: response.getBody() });
      },
      onError: reject,
    });
    upload.start();
  });
}

/** The server's offset for an upload resource, asked as the guest. */
async function head(url, token) {
  const r = await fetch(url, { method: 'HEAD', headers: { Authorization: `Bearer ${token}` } });
  return { status: r.status, offset: Number(r.headers.get('Upload-Offset')), complete: r.headers.get('Upload-Complete') };
}

/** Exactly one stored upload for the key, with the file's bytes. */
async function checkOneUpload(server, event, token, key) {
  const r = await server.call('GET', `/api/v1/events/${event.slug}/uploads/by-client-id/${key}`, { token });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.equal(r.body.bytes, video.bytes.length);
  assert.equal(r.body.sha256, video.sha256);
  assert.equal(r.body.kind, 'video');
  assert.equal(r.body.filename, 'tus-interop.mp4');
  const rows = await server.uploads(event);
  assert.equal(rows.length, 1, `one upload row, got ${rows.length}`);
  const original = await fetch(`${server.base}${r.body.urls.original}`, { headers: { Authorization: `Bearer ${token}` } });
  assert.equal(original.status, 200);
  assert.ok(Buffer.from(await original.arrayBuffer()).equals(video.bytes), 'the original is the file');
}

for (const backend of backends()) {
  for (const protocol of ['ietf-draft-05', 'ietf-draft-03']) {
    test(`${backend}: tus-js-client ${protocol}: a whole upload in pieces is stored once`, { timeout: 120_000 }, async () => {
      const { proxy, server, event, token, endpoint } = await setUp(backend, `tus-${protocol}`);
      try {
        const key = crypto.randomUUID();
        const done = await run({ endpoint, protocol, headers: { Authorization: `Bearer ${token}` }, metadata: { client_upload_id: key, filename: 'tus-interop.mp4' } });
        assert.equal(done.aborted, false);
        assert.equal(done.status, 201, `the last piece's answer: ${done.status} ${done.body}`);
        const upload = JSON.parse(done.body);
        assert.equal(upload.client_upload_id, key);
        assert.equal(done.chunks, Math.ceil(video.bytes.length / CHUNK));
        assert.ok(proxy.up < video.bytes.length * 1.05, `${proxy.up} bytes sent for ${video.bytes.length}`);
        await checkOneUpload(server, event, token, key);
      } finally {
        await proxy.close();
        await server.stop();
      }
    });

    test(`${backend}: tus-js-client ${protocol}: an upload stopped after three pieces resumes from the server's offset`, { timeout: 120_000 }, async () => {
      const { proxy, server, event, token, endpoint } = await setUp(backend, `tus-cut-${protocol}`);
      try {
        const key = crypto.randomUUID();
        const options = { endpoint, protocol, headers: { Authorization: `Bearer ${token}` }, metadata: { client_upload_id: key, filename: 'tus-interop.mp4' } };
        const first = await run(options, { stopAfterChunks: 3 });
        assert.equal(first.aborted, true);
        assert.ok(first.url, 'the upload has an address');
        const kept = await head(first.url, token);
        assert.equal(kept.status, 204);
        assert.equal(kept.complete, '?0');
        assert.equal(kept.offset, 3 * CHUNK, 'the server kept the three pieces');
        assert.equal((await server.uploads(event)).length, 0, 'nothing stored yet');

        const before = proxy.up;
        const second = await run({ ...options, uploadUrl: first.url });
        const sent = proxy.up - before;
        console.log(`${backend} ${protocol}: resumed at ${kept.offset} of ${video.bytes.length} bytes; the second run sent ${sent} bytes`);
        assert.equal(second.aborted, false);
        assert.equal(second.url, first.url, 'the same upload resource');
        assert.ok(second.status === 201 || second.status === 200, `the last piece's answer: ${second.status}`);
        assert.ok(sent < video.bytes.length, `the second run sent ${sent} bytes of ${video.bytes.length}`);
        assert.ok(sent < video.bytes.length - kept.offset + 64 * 1024, `only the rest: ${sent} bytes for ${video.bytes.length - kept.offset}`);
        await checkOneUpload(server, event, token, key);
        const end = await head(first.url, token);
        assert.equal(end.complete, '?1', 'the resource says complete');
      } finally {
        await proxy.close();
        await server.stop();
      }
    });
  }
}
