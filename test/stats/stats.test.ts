import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildStats, defaultBucketMs, quantile } from '../../src/stats/stats.js';
import { parseDuration, parseInstant } from '../../src/stats/time.js';
import { scoreBuckets } from '../../src/metrics/metrics.js';
import { failureOfToolError, outcomeOf } from '../../src/metrics/outcomes.js';
import { errors } from '../../src/errors.js';
import { bearer, functionCall, newTrace, startFixtureServer } from '../helpers/fixtures.js';
import type { TestServer } from '../helpers/server.js';

describe('stats helpers', () => {
  it('interpolates a quantile inside its histogram bucket, and answers the last edge above it', () => {
    const edges = [10, 20, 40];
    expect(quantile([0, 0, 0, 0], edges, 0.5)).toBeNull();
    expect(quantile([10, 0, 0, 0], edges, 0.5)).toBe(5);
    expect(quantile([0, 10, 0, 0], edges, 0.5)).toBe(15);
    expect(quantile([5, 5, 0, 0], edges, 0.99)).toBeCloseTo(19.8);
    expect(quantile([0, 0, 0, 3], edges, 0.5)).toBe(40);
  });

  it('reads instants as ISO, ms since epoch or a duration back from now, and durations with units', () => {
    const now = Date.parse('2026-11-01T12:00:00Z');
    expect(parseInstant('2026-11-01T11:00:00Z', now)).toBe(now - 3_600_000);
    expect(parseInstant('1700000000000', now)).toBe(1_700_000_000_000);
    expect(parseInstant('15m', now)).toBe(now - 900_000);
    expect(parseInstant('yesterday', now)).toBeUndefined();
    expect([parseDuration('30s'), parseDuration('1h'), parseDuration('250'), parseDuration('0'), parseDuration('1x')]).toEqual([30_000, 3_600_000, 250, undefined, undefined]);
    expect(defaultBucketMs(3_600_000)).toBe(30_000);
    expect(defaultBucketMs(15 * 60_000)).toBe(10_000);
  });

  it("cuts each grader's range in ten score buckets", () => {
    expect(scoreBuckets([[0, 1]])).toEqual([0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1]);
    expect(scoreBuckets([[0, 1], [0, 10]])).toEqual([0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
  });

  it('tells whose failure a tool error is by the code of what the tool threw', () => {
    expect(failureOfToolError(new Error('no such doc'))).toEqual({ kind: 'model', where: 'tool' });
    expect(failureOfToolError(errors.pathEscape('../x'))).toEqual({ kind: 'model', where: 'tool' });
    expect(failureOfToolError(errors.sandboxQueueTimeout(10))).toEqual({ kind: 'infra', where: 'sandbox' });
    expect(failureOfToolError(errors.store('disk full'))).toEqual({ kind: 'infra', where: 'store' });
    expect(failureOfToolError(errors.corpus('/x', 'missing'))).toEqual({ kind: 'infra', where: 'tool' });
    expect([outcomeOf('ok', true), outcomeOf('interrupted', true), outcomeOf('budget_exceeded', false)]).toEqual(['replayed', 'interrupted', 'budget_exhausted']);
  });

  it('turns grouped rows into aligned series, rates, means and percentiles', () => {
    const s = buildStats(
      {
        calls: [
          { t: 0, tool: 'a', status: 'ok', le: 0, n: 3 },
          { t: 60_000, tool: 'a', status: 'tool_error', le: 1, n: 1 },
          { t: 60_000, tool: 'a', status: 'timeout', le: 2, n: 1 },
          { t: 0, tool: 'b', status: 'running', le: -1, n: 4 },
        ],
        rolloutsStarted: [{ t: 0, n: 2 }],
        grades: [{ t: 60_000, grader: 'g', grader_version: 'v', graded: 2, errors: 1, bad_rows: 0, score_sum: 1.5, tool_calls: 7, budget_exhausted: 1, no_tool_calls: 0 }],
        flags: [{ grader: null, grader_version: null, kind: 'path_escape', rollouts: 1, events: 3 }],
      },
      { since: 0, until: 120_000, bucketMs: 60_000 },
      { sandboxes: null, failures: null },
    );
    expect(s.buckets).toEqual(['1970-01-01T00:00:00.000Z', '1970-01-01T00:01:00.000Z']);
    expect(s.tool_calls.ok).toEqual([3, 0]);
    expect(s.failures).toEqual({ model: [0, 1], infra: [0, 2], data: [0, 0] });
    expect(s.tools).toEqual([{ tool: 'a', calls: 5, by_outcome: { ok: 3, tool_error: 1, timeout: 1 }, error_rate: 0.4, p50_ms: 0.83, p99_ms: 4.88 }]);
    expect(s.learning_curve).toEqual([
      {
        grader: 'g', grader_version: 'v', graded: [0, 2], errors: [0, 1], mean_score: [null, 0.75], tool_calls_per_rollout: [null, 3.5],
        budget_exhaustion_rate: [null, 0.5], no_tool_call_rate: [null, 0],
      },
    ]);
    expect(s.totals).toMatchObject({ rollouts_started: 2, rollouts_graded: 2, tool_calls: 5, tool_calls_per_minute: 2.5 });
  });
});

describe('GET /v1/stats', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startFixtureServer({ listen: false });
  });
  afterAll(() => s.close());
  const get = (url: string) => s.app.inject({ method: 'GET', url, headers: bearer(s.key) });

  it('answers the window of the calls and grades just made', async () => {
    const trace = newTrace();
    for (const text of ['a', 'b']) {
      await s.app.inject({ method: 'POST', url: '/tools', headers: bearer(s.key), payload: functionCall('echo', { text }, { trace_id: trace }) });
    }
    await s.app.inject({ method: 'POST', url: '/graders/exact', headers: bearer(s.key), payload: { sample: { output_text: '1' }, item: { reference_answer: '1' }, trace_id: trace } });
    const res = await get('/v1/stats?since=5m&bucket=1m');
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.bucket_ms).toBe(60_000);
    expect(body.buckets.length).toBeGreaterThanOrEqual(5);
    expect(body.totals.tool_calls).toBeGreaterThanOrEqual(2);
    expect(body.tools.find((t: { tool: string }) => t.tool === 'echo')).toMatchObject({ error_rate: 0 });
    const curve = body.learning_curve.find((c: { grader: string }) => c.grader === 'exact');
    expect(curve.mean_score.filter((x: number | null) => x !== null)).toEqual([1]);
    expect(curve.tool_calls_per_rollout.filter((x: number | null) => x !== null)).toEqual([2]);
    expect(body.this_replica.failures).toEqual([]);
  });

  it('computes only the figures asked for: a curve over days need not scan every call', async () => {
    const res = await get('/v1/stats?since=1h&include=grades,integrity');
    expect(res.statusCode).toBe(200);
    expect(res.json().include).toEqual(['grades', 'integrity']);
    expect(res.json().tools).toEqual([]);
    expect(res.json().learning_curve.find((c: { grader: string }) => c.grader === 'exact')).toBeDefined();
    expect((await get('/v1/stats?include=calls,everything')).statusCode).toBe(400);
  });

  it('refuses a bad window with 400 and a code', async () => {
    const absurd = ['until=-1', 'since=-5&until=5', 'since=999999999999999999', 'since=100000000d', 'until=+275760-09-13'];
    for (const url of ['/v1/stats?since=yesterday', '/v1/stats?since=1h&bucket=1ms', '/v1/stats?since=1m&until=2m', '/v1/stats?bucket=x', ...absurd.map((q) => `/v1/stats?${q}`)]) {
      const res = await get(url);
      expect(res.statusCode, url).toBe(400);
      expect(res.json().error.code).toBe('RFT_ERR_BAD_REQUEST');
    }
    // /v1/rollouts?since= reads instants the same way.
    expect((await get('/v1/rollouts?since=-1')).json().error.code).toBe('RFT_ERR_BAD_REQUEST');
    expect((await get('/v1/rollouts?since=1h')).statusCode).toBe(200);
    expect((await s.app.inject({ method: 'GET', url: '/v1/stats' })).statusCode).toBe(401);
  });
});
