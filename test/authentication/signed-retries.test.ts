// Standard Webhooks senders reuse a message's webhook-id when they retry it. Sent here by the
// `standardwebhooks` package itself, over real HTTP.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { functionCall, startFixtureServer } from '../helpers/fixtures.js';
import type { TestServer } from '../helpers/server.js';
import { runs } from '../fixtures/units/tools/echo.js';

const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const sender = new Webhook(SECRET);

let s: TestServer;
beforeAll(async () => {
  s = await startFixtureServer({ env: { RFT_SIGNING_SECRETS: SECRET } });
});
afterAll(() => s.close());

/** One delivery attempt as a Standard Webhooks sender makes it: a fresh timestamp and signature each time. */
async function deliver(path: string, id: string, body: string, at = new Date()) {
  const res = await fetch(s.url + path, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'webhook-id': id,
      'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
      'webhook-signature': sender.sign(id, at, body),
    },
    body,
  });
  return { status: res.status, json: (await res.json()) as { output?: string; error?: { code: string } } };
}

describe('signed retries', () => {
  it('accepts a retry (same webhook-id, same body, new timestamp) and runs the call once', async () => {
    const id = `msg_${randomUUID()}`;
    const call = functionCall('echo', { text: 'once' });
    const body = JSON.stringify(call);
    const first = await deliver('/tools', id, body, new Date(Date.now() - 20_000));
    const retry = await deliver('/tools', id, body);
    expect(first.status).toBe(200);
    expect(retry.status).toBe(200);
    expect(retry.json).toEqual(first.json);
    expect(runs.get(call.trace_id)).toBe(1);
  });

  it('refuses the same webhook-id with another body', async () => {
    const id = `msg_${randomUUID()}`;
    expect((await deliver('/tools', id, JSON.stringify(functionCall('echo', { text: 'a' })))).status).toBe(200);
    const other = await deliver('/tools', id, JSON.stringify(functionCall('echo', { text: 'b' })));
    expect(other.status).toBe(401);
    expect(other.json.error!.code).toBe('RFT_ERR_SIGNATURE_REPLAY');
  });

  it('does not let a failed request (400, 500) use up its webhook-id: the retry gets the same answer, not a replay refusal', async () => {
    const id = `msg_${randomUUID()}`;
    const malformed = JSON.stringify({ type: 'function_call', name: 'echo', arguments: '{}', trace_id: `trace_${randomUUID()}` });
    for (let attempt = 0; attempt < 3; attempt++) {
      const r = await deliver('/tools', id, malformed);
      expect(r.status).toBe(400);
      expect(r.json.error!.code).toBe('RFT_ERR_BAD_REQUEST');
    }
    const gid = `msg_${randomUUID()}`;
    const grade = JSON.stringify({ sample: { output_text: 'x' }, item: {}, trace_id: `trace_${randomUUID()}` });
    for (let attempt = 0; attempt < 3; attempt++) {
      const r = await deliver('/graders/broken', gid, grade);
      expect(r.status).toBe(500);
      expect(r.json.error!.code).toBe('RFT_ERR_GRADER_FAILED');
    }
  });

  it('still refuses a forged retry: the right id and body with a signature from another secret', async () => {
    const id = `msg_${randomUUID()}`;
    const body = JSON.stringify(functionCall('echo', { text: 'f' }));
    expect((await deliver('/tools', id, body)).status).toBe(200);
    const at = new Date();
    const forged = new Webhook(`whsec_${Buffer.from('an attacker secret, 32 bytes lon').toString('base64')}`).sign(id, at, body);
    const res = await fetch(s.url + '/tools', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'webhook-id': id, 'webhook-timestamp': String(Math.floor(at.getTime() / 1000)), 'webhook-signature': forged },
      body,
    });
    expect(res.status).toBe(401);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('RFT_ERR_SIGNATURE_INVALID');
  });
});
