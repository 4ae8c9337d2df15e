// Slow and keyless clients (issue 10, item 6). Before: the key was checked after the body was read,
// and 1,100 connections sending partial bodies without a key made every legitimate call fail.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Socket } from 'node:net';
import { bearer, fixtureGraders, fixtureTools, functionCall, startFixtureServer } from '../helpers/fixtures.js';
import type { TestServer } from '../helpers/server.js';
import { spawnServer, type ChildServer } from '../helpers/child-server.js';
import { open, parseReply } from './raw.js';

const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const ATTACKER = '127.0.0.2';

/** Legitimate calls from 127.0.0.1 while the attack runs: every one must be answered 200. */
async function legitimateCalls(url: string, key: string, n: number): Promise<number[]> {
  return Promise.all(
    Array.from({ length: n }, async () => {
      const res = await fetch(`${url}/tools`, {
        method: 'POST',
        headers: { ...bearer(key), 'content-type': 'application/json' },
        body: JSON.stringify(functionCall('echo', { text: 'hi' })),
        signal: AbortSignal.timeout(20_000),
      }).catch((e: Error) => ({ status: `${e.name}: ${String((e.cause as Error | undefined)?.message ?? e.message)}` }));
      return res.status as number;
    }),
  );
}

interface Held {
  socket: Socket;
  reply: Promise<{ status: number; code: string | undefined } | undefined>;
  closed: Promise<void>;
}

/** Opens a connection from the attacker's address and sends `text` (never the rest). */
async function hold(url: string, text: string): Promise<Held> {
  const socket = await open(url, ATTACKER);
  let data = '';
  socket.on('error', () => {});
  const closed = new Promise<void>((r) => socket.once('close', () => r()));
  const reply = new Promise<{ status: number; code: string | undefined } | undefined>((resolve) => {
    socket.on('data', (d: Buffer) => {
      data += d.toString();
      const r = parseReply(data);
      if (r) resolve({ status: r.status, code: (JSON.parse(r.body) as { error?: { code: string } }).error?.code });
    });
    socket.once('close', () => resolve(undefined));
  });
  socket.write(text);
  return { socket, reply, closed };
}

const partialBody = (extra = '') =>
  `POST /tools HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n${extra}\r\n{"type":"function_call","partial`;

describe('keyless clients are refused before their body is read', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startFixtureServer({});
  });
  afterAll(() => s.close());

  it('answers 1,100 partial-body requests without a key at once and closes them, while authenticated calls are answered', async () => {
    const held = await Promise.all(Array.from({ length: 1100 }, () => hold(s.url, partialBody())));
    const [statuses, replies] = await Promise.all([legitimateCalls(s.url, s.key, 50), Promise.all(held.map((h) => h.reply))]);
    expect(statuses.filter((x) => x !== 200)).toEqual([]);
    // 401 until the address has failed too often, then the refusal the trainer retries: all before the body.
    const codes = new Set(replies.map((r) => r?.code));
    expect([...codes].sort()).toEqual(['RFT_ERR_AUTH_MISSING', 'RFT_ERR_RATE_LIMITED_RETRY']);
    await Promise.all(held.map((h) => h.closed));
  });

  it('reads the body of a request whose key is valid', async () => {
    const body = JSON.stringify(functionCall('echo', { text: 'slow but keyed' }));
    const socket = await open(s.url);
    let data = '';
    socket.on('data', (d: Buffer) => (data += d.toString()));
    socket.write(`POST /tools HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${s.key}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`);
    socket.write(body.slice(0, 10));
    await new Promise((r) => setTimeout(r, 300));
    expect(data).toBe('');
    socket.write(body.slice(10));
    await expect.poll(() => parseReply(data)?.status, { timeout: 10_000 }).toBe(200);
    socket.destroy();
  });
});

describe('timeouts count how long a request takes to arrive, not how long it runs', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startFixtureServer({ env: { RFT_HEADERS_TIMEOUT_MS: '1000', RFT_BODY_TIMEOUT_MS: '1000' } });
  });
  afterAll(() => s.close());

  it('answers a tool call that runs longer than the body timeout', async () => {
    const res = await fetch(`${s.url}/tools`, {
      method: 'POST',
      headers: { ...bearer(s.key), 'content-type': 'application/json' },
      body: JSON.stringify(functionCall('echo', { text: 'done', delay_ms: 2500 })),
    });
    expect(res.status).toBe(200);
  });

  it('cuts a keyed request whose body stalls, and a connection whose headers never end', async () => {
    const started = Date.now();
    const stalled = await hold(s.url, partialBody(`Authorization: Bearer ${s.key}\r\n`));
    const idle = await hold(s.url, 'POST /tools HTTP/1.1\r\nHost: x\r\n');
    expect((await stalled.reply)?.code).toBe('RFT_ERR_REQUEST_TIMEOUT');
    expect((await idle.reply)?.code).toBe('RFT_ERR_REQUEST_TIMEOUT');
    await Promise.all([stalled.closed, idle.closed]);
    // The 1-s timeouts, checked every second: about 2 s, more on a loaded machine; the defaults
    // (10 s for headers, 30 s for a body) would take longer than this bound.
    expect(Date.now() - started).toBeLessThan(8_000);
  });
});

describe('a server with 1,024 file descriptors, held by 1,100 slow connections', () => {
  let server: ChildServer;
  let url = '';
  let dataDir = '';
  const KEY = 'slow-clients-key-0123456789';

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'rft-slow-'));
    // The descriptor limit of many hosts; the server keeps half of it for the store and sandboxes.
    server = await spawnServer(
      { RFT_DATA_DIR: dataDir, RFT_API_KEYS: KEY, RFT_SIGNING_SECRETS: SECRET, RFT_TOOLS_DIR: fixtureTools, RFT_GRADERS_DIR: fixtureGraders },
      { command: ['sh', '-c', `ulimit -n 1024 && exec "${process.execPath}" bin/rft-endpoints.js serve`] },
    );
    url = server.url;
  }, 120_000);
  afterAll(async () => {
    await server?.stop('SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('keeps answering authenticated calls: the oldest unauthenticated connections are closed to make room', async () => {
    const ts = Math.floor(Date.now() / 1000);
    // Half with headers that never end, half with a (bogus) signature and a body that never ends:
    // neither can be refused from its headers alone.
    const held = await Promise.all(
      Array.from({ length: 1100 }, (_, i) =>
        hold(
          url,
          i % 2 === 0
            ? 'POST /tools HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n'
            : partialBody(`webhook-id: msg_${i}\r\nwebhook-timestamp: ${ts}\r\nwebhook-signature: v1,${Buffer.alloc(32).toString('base64')}\r\n`),
        ),
      ),
    );
    const statuses = await legitimateCalls(url, KEY, 50);
    expect(statuses.filter((x) => x !== 200)).toEqual([]);
    const ready = (await (await fetch(`${url}/readyz`)).json()) as { connections: { max: number; closed_for_room: number } };
    expect(ready.connections.max).toBe(512);
    expect(ready.connections.closed_for_room).toBeGreaterThanOrEqual(1100 - 512);
    for (const h of held) h.socket.destroy();
  }, 60_000);
});
