import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addressKey, FailureLimiter } from '../../src/authentication/failure-limiter.js';
import { bearer, functionCall, startFixtureServer } from '../helpers/fixtures.js';
import type { TestServer } from '../helpers/server.js';

describe('failed authentications per address', () => {
  it('counts an IPv6 host by its /64 and an IPv4-mapped address as IPv4', () => {
    expect(addressKey('2001:db8:1:2:aaaa::1')).toBe(addressKey('2001:0db8:0001:0002:ffff:1:2:3'));
    expect(addressKey('2001:db8:1:2::1')).not.toBe(addressKey('2001:db8:1:3::1'));
    expect(addressKey('::ffff:10.0.0.1')).toBe('10.0.0.1');
    expect(addressKey('::1')).toBe('0:0:0:0::/64');
  });

  it('blocks past the limit until the window ends, and forgets the oldest addresses first', () => {
    let now = 0;
    const f = new FailureLimiter({ max: 3, windowMs: 1000, maxEntries: 2, now: () => now });
    for (let i = 0; i < 3; i++) {
      expect(f.blockedFor('10.0.0.1')).toBe(0);
      f.fail('10.0.0.1');
    }
    expect(f.blockedFor('10.0.0.1')).toBe(1);
    now = 999;
    expect(f.blockedFor('10.0.0.1')).toBe(1);
    now = 1000;
    expect(f.blockedFor('10.0.0.1')).toBe(0);
    f.fail('10.0.0.2');
    f.fail('10.0.0.3');
    f.fail('10.0.0.4');
    expect(f.size).toBe(2);
  });
});

describe('the limit on the server', () => {
  const WINDOW_MS = 5_000;
  let s: TestServer;
  beforeAll(async () => {
    // A window of 5 s on the real clock: every request below, from the first failure to the last
    // refusal, must land inside it (with 1 s, a loaded machine could take longer than the window
    // over the dozen requests and the address was let through again). The exact boundary is the
    // injected clock's, above.
    s = await startFixtureServer({ listen: false, env: { RFT_AUTH_FAILURE_LIMIT: '5', RFT_AUTH_FAILURE_WINDOW_MS: String(WINDOW_MS), RFT_API_KEYS: 'a:first-key-0123456789ab,b:second-key-0123456789ab' } });
  });
  afterAll(() => s.close());

  const from = (remoteAddress: string, url: string, headers: Record<string, string>) =>
    s.app.inject({ method: url === '/tools' ? 'POST' : 'GET', url, headers, remoteAddress, ...(url === '/tools' ? { payload: functionCall('echo', { text: 'x' }) } : {}) });

  it('refuses an address after 5 failures (429 on the API, 503 with Retry-After to the trainer), lets a key already accepted through, then recovers', async () => {
    const ip = '192.0.2.10';
    expect((await from(ip, '/v1/tools', bearer('first-key-0123456789ab'))).statusCode).toBe(200);
    for (let i = 0; i < 5; i++) expect((await from(ip, '/v1/tools', bearer(`wrong-key-0123456789-${i}`))).statusCode).toBe(401);

    const api = await from(ip, '/v1/tools', bearer('wrong-key-0123456789-x'));
    expect(api.statusCode).toBe(429);
    expect(api.json().error.code).toBe('RFT_ERR_AUTH_RATE_LIMITED');
    expect(Number(api.headers['retry-after'])).toBeGreaterThan(0);
    const tools = await from(ip, '/tools', {});
    expect(tools.statusCode).toBe(503);
    expect(tools.json().error).toMatchObject({ code: 'RFT_ERR_RATE_LIMITED_RETRY', details: { reason: 'auth_failures' } });
    expect(tools.headers['retry-after']).toBeDefined();
    // A guess is never compared while the address is blocked, even a right one this process has not seen yet.
    expect((await from(ip, '/v1/tools', bearer('second-key-0123456789ab'))).statusCode).toBe(429);
    // The key the address already used keeps working, and other addresses are not affected.
    expect((await from(ip, '/v1/tools', bearer('first-key-0123456789ab'))).statusCode).toBe(200);
    expect((await from('192.0.2.11', '/v1/tools', bearer('wrong-key-0123456789-y'))).statusCode).toBe(401);

    await expect.poll(async () => (await from(ip, '/v1/tools', bearer('second-key-0123456789ab'))).statusCode, { timeout: WINDOW_MS + 10_000, interval: 100 }).toBe(200);
  });

  it('counts a bad signature as a failure', async () => {
    const ip = '192.0.2.20';
    const s2 = await startFixtureServer({ listen: false, env: { RFT_AUTH_FAILURE_LIMIT: '2', RFT_SIGNING_SECRETS: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' } });
    try {
      const headers = { 'webhook-id': 'msg_1', 'webhook-timestamp': String(Math.floor(Date.now() / 1000)), 'webhook-signature': `v1,${Buffer.alloc(32).toString('base64')}` };
      const send = () => s2.app.inject({ method: 'POST', url: '/v1/graders/validate', headers, payload: { grader: {} }, remoteAddress: ip });
      expect((await send()).json().error.code).toBe('RFT_ERR_SIGNATURE_INVALID');
      expect((await send()).json().error.code).toBe('RFT_ERR_SIGNATURE_INVALID');
      expect((await send()).json().error.code).toBe('RFT_ERR_AUTH_RATE_LIMITED');
    } finally {
      await s2.close();
    }
  });
});
