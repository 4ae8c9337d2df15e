// The one listener builder (src/http/listener.ts), on real sockets on 127.0.0.1 (issue 37). The cases
// every listener shares are a table in test/doors/conformance/listeners.test.ts; here what needs more:
// a process's descriptors taken by one listener's flood, WebSocket handshakes, the configured lists, the
// timeouts, and a rewrite that throws.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Socket } from 'node:net';
import WebSocket from 'ws';
import { pino } from 'pino';
import { loadConfig } from '../../src/config.js';
import { splitConnections } from '../../src/http/connections.js';
import { buildListener } from '../../src/http/listener.js';
import { bearer, fixtureGraders, fixtureTools, functionCall } from '../helpers/fixtures.js';
import { spawnServer, type ChildServer } from '../helpers/child-server.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { thrown } from '../helpers/codes.js';
import { open, statusAndCode } from './raw.js';

type Answer = { status: number; code: string | undefined };

function ask(url: string, path: string, headers: Record<string, string> = {}): Promise<Answer> {
  const h = { host: new URL(url).host, ...headers };
  return statusAndCode(url, `GET ${path} HTTP/1.1\r\n${Object.entries(h).map(([k, v]) => `${k}: ${v}`).join('\r\n')}\r\nconnection: close\r\n\r\n`);
}

/** A WebSocket handshake: 'open', or the refusal's status and code. */
function handshake(url: string, opts: WebSocket.ClientOptions = {}): Promise<Answer | 'open'> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, opts);
    ws.once('open', () => {
      ws.close();
      resolve('open');
    });
    ws.once('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode!, code: (JSON.parse(body) as { error: { code: string } }).error.code }));
    });
    ws.once('error', reject);
  });
}

describe('a process with 512 descriptors whose private listener is flooded with idle half-requests', () => {
  let server: ChildServer;
  let privateUrl = '';
  let dataDir = '';
  const KEY = 'listener-flood-key-0123456789';

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'rft-flood-'));
    server = await spawnServer(
      { RFT_DATA_DIR: dataDir, RFT_API_KEYS: KEY, RFT_TOOLS_DIR: fixtureTools, RFT_GRADERS_DIR: fixtureGraders, RFT_PRIVATE_PORT: '0', RFT_LOG_LEVEL: 'info' },
      { command: ['sh', '-c', `ulimit -n 512 && exec "${process.execPath}" bin/rft-endpoints.js serve`] },
    );
    // (pino writes its lines asynchronously: the one naming the private listener may follow the banner)
    const line = await vi.waitFor(
      () => {
        const l = server.stdout().split('\n').find((x) => x.includes('private listener'));
        if (!l) throw new Error('no log line names the private listener yet');
        return l;
      },
      { timeout: 10_000 },
    );
    privateUrl = (JSON.parse(line) as { url: string }).url;
  }, 120_000);
  afterAll(async () => {
    await server?.stop('SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('keeps answering the trainer\'s POST /tools on the main listener, and the private listener\'s own callers', async () => {
    // More half-requests than the process has descriptors: before, they took every one of them.
    const held: Socket[] = [];
    for (let batch = 0; batch < 7; batch++) {
      held.push(
        ...(await Promise.all(
          Array.from({ length: 100 }, async () => {
            const s = await open(privateUrl);
            s.on('error', () => {});
            s.write('POST /reward/x HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n');
            return s;
          }),
        )),
      );
    }
    try {
      const statuses = await Promise.all(
        Array.from({ length: 20 }, async (_, i) => {
          const res = await fetch(`${server.url}/tools`, {
            method: 'POST',
            headers: { ...bearer(KEY), 'content-type': 'application/json' },
            body: JSON.stringify(functionCall('echo', { text: `call ${i}` })),
            signal: AbortSignal.timeout(20_000),
          }).catch((e: Error) => ({ status: `${e.name}: ${String((e.cause as Error | undefined)?.message ?? e.message)}` }));
          return res.status;
        }),
      );
      expect(statuses.filter((s) => s !== 200)).toEqual([]);
      expect((await ask(privateUrl, '/healthz')).status).toBe(200);
      // The private listener's share of the 256 connections the process allows itself (half of 512): a quarter.
      await expect.poll(() => held.filter((s) => s.destroyed || s.readyState === 'closed').length, { timeout: 10_000 }).toBeGreaterThanOrEqual(700 - 64);
    } finally {
      for (const s of held) s.destroy();
    }
  }, 90_000);
});

describe('the credential-less listeners answer trainers, not web pages', () => {
  let s: TestServer;
  let priv = '';
  let gym = '';
  beforeAll(async () => {
    s = await startTestServer({
      env: {
        RFT_NEMO_GYM_PORT: '0',
        RFT_PRIVATE_PORT: '0',
        RFT_PRIVATE_ALLOWED_HOSTS: 'trainer-node,10.1.2.3',
        RFT_PRIVATE_ALLOWED_ORIGINS: 'http://dash.example:8080',
        RFT_HEADERS_TIMEOUT_MS: '1000',
        RFT_BODY_TIMEOUT_MS: '1000',
      },
    });
    priv = s.app.rft.privateDoors!.url;
    gym = s.app.rft.nemoGym!.url;
  });
  afterAll(() => s?.close());

  it('answers to loopback names and addresses, with or without a port', async () => {
    const port = new URL(priv).port;
    for (const host of ['127.0.0.1', `127.0.0.1:${port}`, `localhost:${port}`, 'LOCALHOST.', `[::1]:${port}`, '127.0.0.2']) {
      expect([host, (await ask(priv, '/healthz', { host })).status]).toEqual([host, 200]);
      expect([host, (await ask(gym, '/', { host })).status]).toEqual([host, 200]);
    }
  });

  it('answers to the names it is configured with, and only the listener configured with them', async () => {
    expect((await ask(priv, '/healthz', { host: 'trainer-node:9000' })).status).toBe(200);
    expect((await ask(priv, '/healthz', { host: '10.1.2.3' })).status).toBe(200);
    expect(await ask(gym, '/', { host: 'trainer-node:9000' })).toEqual({ status: 403, code: 'RFT_ERR_HOST_NOT_ALLOWED' });
    expect(await ask(priv, '/healthz', { host: 'trainer-node.attacker.example' })).toEqual({ status: 403, code: 'RFT_ERR_HOST_NOT_ALLOWED' });
  });

  it('refuses a page\'s GET that carries no Origin but says it is cross-site', async () => {
    expect(await ask(gym, '/', { 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'no-cors' })).toEqual({ status: 403, code: 'RFT_ERR_ORIGIN_NOT_ALLOWED' });
    // a page typed in the address bar is no page's request
    expect((await ask(gym, '/', { 'sec-fetch-site': 'none' })).status).toBe(200);
  });

  it('accepts a configured origin and refuses every other, null included', async () => {
    expect((await ask(priv, '/healthz', { origin: 'http://dash.example:8080' })).status).toBe(200);
    for (const origin of ['http://dash.example', 'null', `http://127.0.0.1:${new URL(priv).port}`]) {
      expect(await ask(priv, '/healthz', { origin })).toEqual({ status: 403, code: 'RFT_ERR_ORIGIN_NOT_ALLOWED' });
    }
  });

  it('refuses an OpenEnv WebSocket handshake from a page, or under a foreign Host, and opens one from a trainer', async () => {
    const ws = `${priv.replace('http://', 'ws://')}/finqa/ws`;
    expect(await handshake(ws, { origin: 'http://attacker.example' })).toEqual({ status: 403, code: 'RFT_ERR_ORIGIN_NOT_ALLOWED' });
    expect(await handshake(ws, { headers: { host: 'attacker.example' } })).toEqual({ status: 403, code: 'RFT_ERR_HOST_NOT_ALLOWED' });
    // What OpenEnv's client (python websockets, no origin by default) sends, and a configured origin.
    expect(await handshake(ws)).toBe('open');
    expect(await handshake(ws, { origin: 'http://dash.example:8080' })).toBe('open');
    expect(await handshake(ws.replace('127.0.0.1', 'localhost'))).toBe('open');
  });

  it('closes a half-request after the main listener\'s headers timeout, with its coded 408', async () => {
    for (const url of [priv, gym]) {
      const sock = await open(url);
      let data = '';
      sock.on('data', (d: Buffer) => (data += d.toString()));
      const closed = new Promise<void>((r) => sock.once('close', () => r()));
      sock.write('POST / HTTP/1.1\r\nHost: 127.0.0.1\r\n');
      // RFT_HEADERS_TIMEOUT_MS=1000, checked every second (Node's default: 60 s, checked every 30 s).
      await closed;
      expect(data).toContain('RFT_ERR_REQUEST_TIMEOUT');
    }
  }, 15_000);
});

describe('buildListener', () => {
  it('answers 400 for a URL its rewrite cannot decode, and keeps answering', async () => {
    const { app } = buildListener({
      name: 'test',
      fastify: { loggerInstance: pino({ level: 'silent' }) },
      bodyLimitBytes: 1024,
      headersTimeoutMs: 1000,
      bodyTimeoutMs: 1000,
      maxConnections: 16,
      rewriteUrl: (raw) => decodeURIComponent(raw.url ?? '/'),
    });
    app.setErrorHandler((err: Error & { statusCode?: number; toJSON?: () => unknown }, _req, reply) => void reply.code(err.statusCode ?? 500).send(err.toJSON?.() ?? {}));
    app.get('/ok', async () => ({ ok: true }));
    await app.listen({ host: '127.0.0.1', port: 0 });
    try {
      const addr = app.server.address() as { port: number };
      const url = `http://127.0.0.1:${addr.port}`;
      expect(await ask(url, '/%E0%A4%A')).toEqual({ status: 400, code: 'RFT_ERR_BAD_REQUEST' });
      expect(await ask(url, '/ok')).toMatchObject({ status: 200 });
    } finally {
      await app.close();
    }
  });

  it('splits the process\'s connections so the main listener keeps at least half', () => {
    expect(splitConnections(512, { 'nemo-gym': 0, private: 0 })).toEqual({ 'nemo-gym': 128, private: 128, main: 256 });
    expect(splitConnections(512, { private: 100, 'nemo-gym': undefined })).toEqual({ private: 100, main: 412 });
    expect(thrown(() => splitConnections(512, { private: 200, 'nemo-gym': 100 })).code).toBe('RFT_ERR_CONNECTION_SHARES');
  });

  it('refuses a host or origin list that is not one', () => {
    expect(thrown(() => loadConfig({ RFT_PRIVATE_ALLOWED_ORIGINS: 'dash.example' })).code).toBe('RFT_ERR_CONFIG');
    expect(thrown(() => loadConfig({ RFT_PRIVATE_ALLOWED_ORIGINS: 'http://dash.example/path' })).code).toBe('RFT_ERR_CONFIG');
    expect(thrown(() => loadConfig({ RFT_NEMO_GYM_ALLOWED_HOSTS: 'http://trainer' })).code).toBe('RFT_ERR_CONFIG');
    expect(loadConfig({ RFT_PRIVATE_ALLOWED_ORIGINS: 'https://a.example,*', RFT_NEMO_GYM_ALLOWED_HOSTS: 'trainer-node,[fd00::1],*' })).toMatchObject({
      private: { allowedOrigins: ['https://a.example', '*'] },
      nemoGym: { allowedHosts: ['trainer-node', '[fd00::1]', '*'] },
    });
  });
});
