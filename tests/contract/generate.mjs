// Fetches the OpenAPI document a fresh server serves and writes it to generated/openapi.json,
// for openapi-typescript to make the client's types from (scripts/contract.sh).

import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer } from './server.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const server = await startServer({ name: 'generate' });
try {
  const response = await fetch(`${server.base}/api/v1/openapi.json`);
  if (!response.ok) throw new Error(`GET /api/v1/openapi.json: ${response.status}`);
  const text = await response.text();
  fs.mkdirSync(path.join(HERE, 'generated'), { recursive: true });
  fs.writeFileSync(path.join(HERE, 'generated', 'openapi.json'), text);
  console.log(`the served document: ${text.length} bytes`);
} finally {
  await server.stop();
}
