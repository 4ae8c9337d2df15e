// Every listener of the server keeps the same promises (issue 37): the main one, the NeMo Gym door's,
// the private one and the metrics one, as a table of doors x cases a later conformance suite extends. Real sockets on
// 127.0.0.1. Before src/http/listener.ts: a bad escape in a NeMo Gym path ended the process, the
// credential-less listeners ran a foreign Host's and a web page's requests, and held every idle
// half-request a client opened; the metrics listener (plain node:http until then) answered a foreign
// Host and a page's request, and held every idle half-request.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Socket } from 'node:net';
import { startTestServer, type TestServer } from '../../helpers/server.js';
import { open, statusAndCode } from '../../http/raw.js';

/** Connections the process may hold, and the credential-less listeners' shares of them (the main one keeps the rest). */
const BUDGET = 160;
const DOOR_CAP = 16;

interface Door {
  name: 'main' | 'nemo-gym' | 'private' | 'metrics';
  url: (s: TestServer) => string;
  /** A request a healthy listener answers 200, without a credential. */
  probe: string;
  /** Takes no credential: the Host and Origin rules apply. */
  local: boolean;
  cap: number;
}

const doors: Door[] = [
  { name: 'main', url: (s) => s.url, probe: 'GET /healthz', local: false, cap: BUDGET - 3 * DOOR_CAP },
  { name: 'nemo-gym', url: (s) => s.app.rft.nemoGym!.url, probe: 'GET /', local: true, cap: DOOR_CAP },
  { name: 'private', url: (s) => s.app.rft.privateDoors!.url, probe: 'GET /healthz', local: true, cap: DOOR_CAP },
  { name: 'metrics', url: (s) => s.app.rft.metricsListener!.url.replace(/\/metrics$/, ''), probe: 'GET /metrics', local: true, cap: DOOR_CAP },
];

interface Case {
  name: string;
  /** The request line, per door (each door's own route where it matters). */
  request: (d: Door) => string;
  headers?: (host: string) => Record<string, string>;
  body?: string;
  /** Status and code expected, per door. */
  expect: (d: Door) => { status: number; code?: string };
}

const cases: Case[] = [
  {
    name: 'bad escape',
    request: (d) => ({ main: 'GET /v1/rollouts/%E0%A4%A', 'nemo-gym': 'POST /ng-rollout/%E0%A4%A/verify', private: 'POST /%E0%A4%A/reset', metrics: 'GET /metrics?%E0%A4%A' })[d.name],
    expect: (d) => (d.name === 'metrics' ? { status: 200 } : { status: 400, code: 'RFT_ERR_BAD_REQUEST' }),
  },
  {
    // DNS rebinding: a page at attacker.example whose name now resolves to 127.0.0.1.
    name: 'foreign Host',
    request: (d) => d.probe,
    headers: () => ({ host: 'attacker.example' }),
    expect: (d) => (d.local ? { status: 403, code: 'RFT_ERR_HOST_NOT_ALLOWED' } : { status: 200 }),
  },
  {
    // A page's cross-site form post: text/plain needs no preflight.
    name: 'browser Origin',
    request: (d) => ({ main: 'POST /tools', 'nemo-gym': 'POST /seed_session', private: 'POST /run_code', metrics: 'GET /metrics' })[d.name],
    headers: (host) => ({ host, origin: 'http://attacker.example', 'content-type': 'text/plain' }),
    body: '{"responses_create_params":{"input":"hi"},"code":"print(1)","language":"python"}',
    expect: (d) => (d.local ? { status: 403, code: 'RFT_ERR_ORIGIN_NOT_ALLOWED' } : { status: 401, code: 'RFT_ERR_AUTH_MISSING' }),
  },
];

function raw(url: string, line: string, headers: Record<string, string>, body = ''): string {
  const h = { host: new URL(url).host, ...headers, ...(body ? { 'content-length': String(Buffer.byteLength(body)) } : {}) };
  return `${line} HTTP/1.1\r\n${Object.entries(h).map(([k, v]) => `${k}: ${v}`).join('\r\n')}\r\nconnection: close\r\n\r\n${body}`;
}

function ask(url: string, line: string, headers: Record<string, string> = {}, body = ''): Promise<{ status: number; code: string | undefined }> {
  return statusAndCode(url, raw(url, line, headers, body));
}

describe('every listener, every case', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer({
      env: {
        RFT_NEMO_GYM_PORT: '0',
        RFT_PRIVATE_PORT: '0',
        RFT_MAX_CONNECTIONS: String(BUDGET),
        RFT_NEMO_GYM_MAX_CONNECTIONS: String(DOOR_CAP),
        RFT_PRIVATE_MAX_CONNECTIONS: String(DOOR_CAP),
        RFT_METRICS_PORT: '0',
        RFT_METRICS_MAX_CONNECTIONS: String(DOOR_CAP),
      },
    });
  });
  afterAll(() => s?.close());

  for (const d of doors) {
    for (const c of cases) {
      it(`${d.name}: ${c.name}`, async () => {
        const url = d.url(s);
        expect(await ask(url, c.request(d), c.headers?.(new URL(url).host) ?? {}, c.body)).toMatchObject(c.expect(d));
        // and the listener still answers
        expect((await ask(url, d.probe)).status).toBe(200);
      });
    }

    it(`${d.name}: idle flood`, async () => {
      const url = d.url(s);
      const flood = d.cap + 40;
      // Headers that never end: a connection that has sent nothing useful.
      const held: Socket[] = [];
      let closedByServer = 0;
      for (let i = 0; i < flood; i++) {
        const sock = await open(url);
        sock.on('error', () => {});
        sock.once('close', () => closedByServer++);
        sock.write(`POST ${d.probe.split(' ')[1]} HTTP/1.1\r\nHost: ${new URL(url).host}\r\n`);
        held.push(sock);
      }
      try {
        // The oldest half-requests make room: the listener still answers, and holds no more than its cap.
        expect((await ask(url, d.probe)).status).toBe(200);
        await expect.poll(() => closedByServer, { timeout: 10_000 }).toBeGreaterThanOrEqual(flood - d.cap);
      } finally {
        for (const sock of held) sock.destroy();
      }
    });
  }
});
