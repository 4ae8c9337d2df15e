// A real server on 127.0.0.1 (random port, temp data dir) for route and end-to-end tests.
// Sandboxes are off unless the test asks: pass env { RFT_SANDBOX: 'bwrap' | 'docker' | 'process' | 'auto' }.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';

export const repoRoot = resolve(import.meta.dirname, '../..');

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
  return {
    url,
    key,
    app,
    dataDir,
    close: async () => {
      await app.close();
      if (ownDir) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
