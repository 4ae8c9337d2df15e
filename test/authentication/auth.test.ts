import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { bearer, functionCall, startFixtureServer } from '../helpers/fixtures.js';
import type { TestServer } from '../helpers/server.js';
import { signWebhook } from '../../src/authentication/webhooks.js';
import { runs } from '../fixtures/units/tools/echo.js';

const SECRET_A = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const SECRET_B = `whsec_${Buffer.from('another secret of 24 byte').toString('base64')}`;
const OLD_KEY = 'old-key-0123456789abcdef';
const NEW_KEY = 'new-key-0123456789abcdef';

let s: TestServer;
beforeAll(async () => {
  s = await startFixtureServer({ listen: false, env: { RFT_API_KEYS: `old:${OLD_KEY},new:${NEW_KEY}`, RFT_SIGNING_SECRETS: `${SECRET_A},${SECRET_B}` } });
});
afterAll(() => s.close());

function signed(body: object, secret = SECRET_A, opts: { id?: string; ts?: number } = {}) {
  const payload = JSON.stringify(body);
  const id = opts.id ?? `msg_${randomUUID()}`;
  const ts = opts.ts ?? Math.floor(Date.now() / 1000);
  return {
    payload,
    headers: { 'content-type': 'application/json', 'webhook-id': id, 'webhook-timestamp': String(ts), 'webhook-signature': signWebhook(secret, id, ts, payload) },
  };
}

const send = (headers: Record<string, string>, payload: string | object) => s.app.inject({ method: 'POST', url: '/tools', headers, payload });

describe('authentication', () => {
  it('refuses a request with no credential, and runs nothing', async () => {
    const call = functionCall('echo', { text: 'x' });
    const res = await send({}, call);
    expect(res.statusCode).toBe(401);
    expect(res.json().error.code).toBe('RFT_ERR_AUTH_MISSING');
    expect(runs.get(call.trace_id)).toBeUndefined();
  });

  it('refuses a wrong key', async () => {
    const res = await send(bearer('wrong-key-0123456789abcdef'), functionCall('echo', { text: 'x' }));
    expect(res.statusCode).toBe(401);
    expect(res.json().error.code).toBe('RFT_ERR_AUTH_INVALID');
  });

  it('accepts every key of a rotation and records which one was used', async () => {
    for (const [key, label] of [[OLD_KEY, 'old'], [NEW_KEY, 'new']] as const) {
      const call = functionCall('echo', { text: label });
      expect((await send(bearer(key), call)).statusCode).toBe(200);
      const rec = await s.app.inject({ method: 'GET', url: `/v1/rollouts/${call.trace_id}`, headers: bearer(key) });
      expect(rec.json().calls[0].credential).toBe(label);
    }
  });

  it('accepts a Standard Webhooks signature made with any configured secret', async () => {
    for (const secret of [SECRET_A, SECRET_B]) {
      const r = signed(functionCall('echo', { text: 'signed' }), secret);
      const res = await send(r.headers, r.payload);
      expect(res.statusCode).toBe(200);
      expect(res.json().output).toBe('signed');
    }
  });

  it('accepts a signature list where only one entry matches', async () => {
    const r = signed(functionCall('echo', { text: 'list' }));
    r.headers['webhook-signature'] = `v1,${Buffer.alloc(32).toString('base64')} ${r.headers['webhook-signature']}`;
    expect((await send(r.headers, r.payload)).statusCode).toBe(200);
  });

  it('refuses a signature over a different body', async () => {
    const r = signed(functionCall('echo', { text: 'a' }));
    const res = await send(r.headers, r.payload.replace('trace_', 'trace-'));
    expect(res.statusCode).toBe(401);
    expect(res.json().error.code).toBe('RFT_ERR_SIGNATURE_INVALID');
  });

  it('refuses a signature made with an unknown secret', async () => {
    const r = signed(functionCall('echo', { text: 'a' }), `whsec_${Buffer.from('not a configured secret!').toString('base64')}`);
    expect((await send(r.headers, r.payload)).json().error.code).toBe('RFT_ERR_SIGNATURE_INVALID');
  });

  // The exact 300-s boundary is checked against an injected clock in webhooks.test.ts; here the route
  // runs on the real clock, so each timestamp is taken just before its request and stays a minute away
  // from the boundary (a loaded CI machine once took over a second between two requests: `now + 301`
  // was then inside the window).
  it('refuses a timestamp more than 300 s old or in the future', async () => {
    const nowS = () => Math.floor(Date.now() / 1000);
    for (const offset of [-360, 360]) {
      const r = signed(functionCall('echo', { text: 't' }), SECRET_A, { ts: nowS() + offset });
      const res = await send(r.headers, r.payload);
      expect(res.statusCode).toBe(401);
      expect(res.json().error.code).toBe('RFT_ERR_SIGNATURE_TIMESTAMP');
    }
    const ok = signed(functionCall('echo', { text: 't' }), SECRET_A, { ts: nowS() - 240 });
    expect((await send(ok.headers, ok.payload)).statusCode).toBe(200);
  });

  it('refuses a webhook-id already used with another body, even with a fresh signature', async () => {
    const id = `msg_${randomUUID()}`;
    const first = signed(functionCall('echo', { text: 'r' }), SECRET_A, { id });
    expect((await send(first.headers, first.payload)).statusCode).toBe(200);
    const resigned = signed(functionCall('echo', { text: 'r2' }), SECRET_A, { id });
    expect((await send(resigned.headers, resigned.payload)).json().error.code).toBe('RFT_ERR_SIGNATURE_REPLAY');
  });

  it('leaves health checks open', async () => {
    expect((await s.app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
    expect((await s.app.inject({ method: 'GET', url: '/readyz' })).json().status).toBe('ready');
    expect((await s.app.inject({ method: 'GET', url: '/v1/tools' })).statusCode).toBe(401);
  });
});
