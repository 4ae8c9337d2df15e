// A body over RFT_BODY_LIMIT_BYTES sent to a server in its own process (in-process, the sockets'
// timing hides the defect): the client reads the coded 413, as the CLI's trainer emulator sends it,
// instead of a reset connection it would retry and report as "cannot reach the server (EPIPE)".
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ServerClient } from '../../src/cli/rollout/http.js';
import { postWithRetries } from '../../src/cli/rollout/retry.js';
import { spawnServer, type ChildServer } from '../helpers/child-server.js';

const KEY = 'test_body_limit_0123456789abcdef01234567';
let dataDir: string;
let server: ChildServer;
let client: ServerClient;

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'rft-body-limit-'));
  server = await spawnServer({ RFT_API_KEYS: `k:${KEY}`, RFT_DATA_DIR: dataDir });
  client = new ServerClient(server.url, { key: KEY });
}, 90_000);

afterAll(async () => {
  await client?.close();
  await server?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

it('answers a 20 MB grade 413 RFT_ERR_BODY_TOO_LARGE that the client reads at the first try, and serves the connection on', async () => {
  const huge = { sample: { output_text: 'x'.repeat(20_000_000) }, item: {}, trace_id: 'trace_body_limit' };
  for (let i = 0; i < 2; i++) {
    const r = await postWithRetries(client, '/grade', huge, 0);
    expect(r.ok, r.ok ? '' : r.why).toBe(true);
    if (!r.ok) return;
    expect(r.reply.status).toBe(413);
    expect((JSON.parse(r.reply.text) as { error: { code: string } }).error.code).toBe('RFT_ERR_BODY_TOO_LARGE');
  }
  expect((await client.send('GET', '/healthz')).status).toBe(200);
}, 60_000);
