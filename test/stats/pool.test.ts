// The warm pool's state in GET /v1/stats on a real server with bubblewrap: per kind of sandbox, what
// is warm and in use, the learned step, its bounds, and the last steps with their hits and misses,
// which add up to /metrics' rft_sandbox_pool_takes_total.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { request } from 'undici';
import { describeIf } from '../helpers/require.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { promSample } from '../helpers/prom-text.js';
import { metricsText, pool, poolWarm, startPoolServer, stats, step } from '../helpers/pool-steps.js';
import { driversPresent } from '../sandbox/helpers.js';

const present = await driversPresent();
const STEP = 6;

describeIf(present.bwrap, 'the pool in GET /v1/stats', 'bubblewrap not available')('the warm pool in GET /v1/stats (bwrap)', () => {
  let srv: TestServer;
  beforeAll(async () => {
    srv = await startPoolServer();
  });
  afterAll(() => srv?.close());

  it('shows the steps seen, each with its hits and misses, as /metrics counts them', async () => {
    const before = await pool(srv);
    expect(before).toMatchObject({ warm: 0, hits: 0, misses: 0, kinds: [] });
    expect(before.bounds).toMatchObject({ floor: 1, budget_mb: 512, cap: 32, max: 32, burst_gap_ms: 2_000 });
    expect(before.bounds.prepared_kb).toBeGreaterThan(0);

    await step(srv, 'trace_step1', STEP);
    await poolWarm(srv, STEP); // the burst is over: the pool learned it and prepared as many
    await step(srv, 'trace_step2', STEP);

    const p = await pool(srv);
    expect(p.kinds).toHaveLength(1);
    const [kind] = p.kinds;
    expect(kind).toMatchObject({ latest: true, in_use: 2 * STEP, predicted: STEP });
    expect(kind!.kind).toMatch(/^(tmpfs \d+ MB, \d+ inodes|no tmpfs cap)/); // the latter where sandboxes cannot switch uid (not root)
    expect(kind!.steps.map((s) => s.size)).toEqual([STEP, STEP]);
    expect(kind!.steps[1]).toMatchObject({ hits: STEP, misses: 0 }); // the second step found its sandboxes warm
    expect(kind!.steps[0]!.hits + kind!.steps[0]!.misses).toBe(STEP);
    expect(kind!.steps[0]!.misses).toBeGreaterThan(0); // the first found at most the floor's
    for (const s of kind!.steps) expect(Date.parse(s.last_at)).toBeGreaterThanOrEqual(Date.parse(s.started_at));
    expect(Date.parse(kind!.steps[1]!.started_at) - Date.parse(kind!.steps[0]!.last_at)).toBeGreaterThanOrEqual(2_000);

    const hits = kind!.steps.reduce((n, s) => n + s.hits, 0);
    const misses = kind!.steps.reduce((n, s) => n + s.misses, 0);
    expect([p.hits, p.misses]).toEqual([hits, misses]);
    const text = await metricsText(srv);
    expect(promSample(text, 'rft_sandbox_pool_takes_total', { outcome: 'hit' })).toBe(hits);
    expect(promSample(text, 'rft_sandbox_pool_takes_total', { outcome: 'miss' })).toBe(misses);
    expect(promSample(text, 'rft_sandbox_pool_predicted_step')).toBe(kind!.predicted);

    // /readyz needs no credential: it shows the pool's totals, not its kinds (host paths) or steps.
    const ready = await request(`${srv.url}/readyz`);
    const readyPool = ((await ready.body.json()) as { sandboxes: { pool: Record<string, unknown> } }).sandboxes.pool;
    expect(Object.keys(readyPool).sort()).toEqual(['hits', 'misses', 'predicted', 'target', 'warm']);
    expect(readyPool).toMatchObject({ predicted: p.predicted, hits: p.hits, misses: p.misses }); // warm moves: the pool refills

    // A rollout's sandbox destroyed is no longer in use.
    const del = await request(`${srv.url}/v1/rollouts/trace_step2_0`, { method: 'DELETE', headers: { authorization: `Bearer ${srv.key}` } });
    await del.body.text();
    expect(del.statusCode).toBeLessThan(300);
    expect((await pool(srv)).kinds[0]!.in_use).toBe(2 * STEP - 1);
  });
});

it('says plainly that sandboxes are off on a server without them', async () => {
  const off = await startTestServer();
  try {
    expect((await stats(off)).this_replica.sandboxes).toBeNull();
  } finally {
    await off.close();
  }
});
