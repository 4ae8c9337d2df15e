// Rate limits shared across replicas through a real Redis (a testcontainers container of our own):
// two servers on one Redis count together; without Redis each counts alone; a Redis outage lets
// calls through (and is counted again once Redis is back); a wrong URL stops the boot.
import { expect, it } from 'vitest';
import { startRedis, containersUnavailable, serviceImages } from '../helpers/containers.js';
import { bearer, startFixtureServer } from '../helpers/fixtures.js';
import { describeIf } from '../helpers/require.js';
import type { TestServer } from '../helpers/server.js';

const unavailable = containersUnavailable(serviceImages.redis);
const LIMIT = 4;

async function replicas(env: Record<string, string>): Promise<AsyncDisposable & { a: TestServer; b: TestServer }> {
  const a = await startFixtureServer({ env });
  const b = await startFixtureServer({ env });
  return { a, b, [Symbol.asyncDispose]: async () => void (await Promise.all([a.close(), b.close()])) };
}

/** Status and error code of GET /v1/tools (every test server's key has the label "test"). */
async function hit(s: TestServer): Promise<{ status: number; code?: string; retryAfter: string | null }> {
  const res = await fetch(`${s.url}/v1/tools`, { headers: bearer(s.key) });
  const body = (await res.json()) as { error?: { code: string } };
  return { status: res.status, ...(body.error ? { code: body.error.code } : {}), retryAfter: res.headers.get('retry-after') };
}

const limited = (r: { status: number; code?: string }) => r.status !== 200;

describeIf(unavailable === undefined, 'Redis container', unavailable ?? '')('rate limits shared through Redis', () => {
  it('two replicas on one Redis count one limit; without Redis each counts its own', async () => {
    await using redis = await startRedis();
    const window = { RFT_RATE_LIMIT: String(LIMIT), RFT_RATE_WINDOW_MS: '60000' };
    {
      await using shared = await replicas({ ...window, RFT_REDIS_URL: redis.url });
      const first = [await hit(shared.a), await hit(shared.b), await hit(shared.a), await hit(shared.b)];
      expect(first.filter(limited)).toEqual([]);
      const over = await hit(shared.b);
      expect(over.code).toBe('RFT_ERR_RATE_LIMITED');
      expect(Number(over.retryAfter)).toBeGreaterThan(0);
      expect((await hit(shared.a)).code).toBe('RFT_ERR_RATE_LIMITED');
    }
    {
      await using alone = await replicas(window);
      const results = [];
      for (let i = 0; i < LIMIT; i++) results.push(await hit(alone.a), await hit(alone.b));
      expect(results.filter(limited)).toEqual([]);
      expect((await hit(alone.a)).code).toBe('RFT_ERR_RATE_LIMITED');
    }
  });

  // Its waits are each bounded (container start, the restart, a 15-s poll); on a machine busy with
  // the rest of the suite's Docker work they added up past the default 30 s once.
  it('lets calls through while Redis is down, without waiting on it, and counts again once it is back', { timeout: 120_000 }, async () => {
    await using redis = await startRedis();
    await using r = await replicas({ RFT_RATE_LIMIT: '2', RFT_RATE_WINDOW_MS: '60000', RFT_REDIS_URL: redis.url });
    expect(limited(await hit(r.a))).toBe(false);
    expect(limited(await hit(r.b))).toBe(false);
    expect((await hit(r.a)).code).toBe('RFT_ERR_RATE_LIMITED');

    await redis.kill();
    const started = performance.now();
    for (let i = 0; i < 5; i++) expect(await hit(i % 2 ? r.a : r.b)).toMatchObject({ status: 200 });
    // Each check gives up at once (no offline queue) or after the 500 ms command timeout at most:
    // 2.5 s for the five at worst, on a machine that serves them at once. 10 s leaves a loaded
    // machine room and still fails a check that waits on the dead Redis (no timeout: forever).
    expect(performance.now() - started).toBeLessThan(10 * 1000);

    await redis.start();
    // Back (empty: nothing persisted): the clients reconnect by themselves and the limit applies again.
    await expect.poll(async () => (await hit(r.a)).code ?? 'ok', { timeout: 15_000, interval: 200 }).toBe('RFT_ERR_RATE_LIMITED');
  });

  it('refuses to start when RFT_REDIS_URL does not answer', async () => {
    await using redis = await startRedis();
    await redis.kill();
    await expect(startFixtureServer({ env: { RFT_REDIS_URL: redis.url } })).rejects.toMatchObject({ code: 'RFT_ERR_CONFIG' });
  });
});
