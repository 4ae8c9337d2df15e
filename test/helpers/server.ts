// A real server on 127.0.0.1 (random port, temp data dir) for route and end-to-end tests.
// Sandboxes are off unless the test asks: pass env { RFT_SANDBOX: 'bwrap' | 'docker' | 'process' | 'auto' }.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { afterAll } from 'vitest';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { runLabelsEnv } from './run-label.js';

export const repoRoot = resolve(import.meta.dirname, '../..');

/** Servers of this test file not closed yet: a failed test never reaches its own close(). */
const open = new Set<TestServer>();
// Registered when a test file imports this module, so after the file's own afterAll hooks: a server
// closed here removes its sandboxes and stops its MCP instances.
// Benches import these helpers outside vitest, where there are no hooks.
if (process.env.VITEST) afterAll(async () => {
  await Promise.all([...open].map((s) => s.close().catch(() => {})));
}, 60_000);

export interface TestServer {
  url: string;
  key: string;
  app: FastifyInstance;
  dataDir: string;
  close(): Promise<void>;
}

export interface TestServerOptions {
  env?: Record<string, string>;
  toolsDir?: string;
  gradersDir?: string;
  /** Reuse a data dir (restart tests); it is then not removed on close. */
  dataDir?: string;
  /** Build only (app.inject), do not listen. */
  listen?: boolean;
  /** A pino logger to capture what the server logs. */
  logger?: Logger;
}

export async function startTestServer(opts: TestServerOptions = {}): Promise<TestServer> {
  const ownDir = opts.dataDir === undefined;
  const dataDir = opts.dataDir ?? mkdtempSync(join(tmpdir(), 'rft-test-'));
  const key = `test_${randomBytes(16).toString('hex')}`;
  const config = loadConfig({
    RFT_LOG_LEVEL: process.env.RFT_TEST_LOG_LEVEL ?? 'silent',
    RFT_SANDBOX: 'none',
    RFT_SANDBOX_TEMPLATES: join(repoRoot, 'examples'),
    RFT_API_KEYS: `test:${key}`,
    RFT_TOOLS_DIR: opts.toolsDir ?? join(repoRoot, 'tools'),
    RFT_GRADERS_DIR: opts.gradersDir ?? join(repoRoot, 'graders'),
    ...runLabelsEnv,
    ...opts.env,
    RFT_DATA_DIR: dataDir,
    HOST: '127.0.0.1',
    PORT: '0',
  });
  const app = await buildApp(config, opts.logger ? { logger: opts.logger } : {});
  let url = '';
  if (opts.listen !== false) {
    await app.listen({ host: '127.0.0.1', port: 0 });
    const addr = app.server.address();
    url = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
  } else {
    await app.ready();
  }
  const server: TestServer = {
    url,
    key,
    app,
    dataDir,
    close: async () => {
      open.delete(server);
      await app.close();
      if (ownDir) rmSync(dataDir, { recursive: true, force: true });
    },
  };
  open.add(server);
  return server;
}

/** POST `body` as JSON to `path` on `server` with its key, as the trainer does; the reply's status and JSON. */
export async function authedPost<T = Record<string, unknown>>(server: TestServer, path: string, body: unknown): Promise<{ status: number; json: T }> {
  const res = await fetch(`${server.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${server.key}` },
    body: JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json()) as T };
}
