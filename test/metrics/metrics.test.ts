import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, functionCall, newTrace, startFixtureServer } from '../helpers/fixtures.js';
import type { TestServer } from '../helpers/server.js';
import { promSample } from '../helpers/prom-text.js';
import { canonicalJson, sha256 } from '../../src/protocol/canonical.js';
import { INTERRUPTED_OUTPUT } from '../../src/ledger/ledger.js';
import { Metrics } from '../../src/metrics/metrics.js';

let s: TestServer;
beforeAll(async () => {
  s = await startFixtureServer({ listen: false, env: { RFT_TOOL_BUDGET: '10' } });
});
afterAll(() => s.close());

const post = (url: string, payload: unknown) => s.app.inject({ method: 'POST', url, headers: bearer(s.key), payload: payload as object });
const scrape = async () => {
  const res = await s.app.inject({ method: 'GET', url: '/metrics', headers: bearer(s.key) });
  expect(res.statusCode).toBe(200);
  return res.body;
};
const delta = async (name: string, labels: Record<string, string>, act: () => Promise<unknown>) => {
  const before = promSample(await scrape(), name, labels) ?? 0;
  await act();
  return (promSample(await scrape(), name, labels) ?? 0) - before;
};

describe('GET /metrics', () => {
  it('needs the credentials like every route, and serves the Prometheus text format with process metrics', async () => {
    expect((await s.app.inject({ method: 'GET', url: '/metrics' })).statusCode).toBe(401);
    const res = await s.app.inject({ method: 'GET', url: '/metrics', headers: bearer(s.key) });
    expect(res.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(promSample(res.body, 'process_cpu_user_seconds_total')).toBeGreaterThan(0);
    expect(res.body).toContain('# TYPE rft_tool_calls_total counter');
  });

  it('declares every tool and outcome at zero before any call, so rates and alerts see them', async () => {
    const text = await scrape();
    expect(promSample(text, 'rft_tool_calls_total', { tool: 'hang', outcome: 'timeout' })).toBe(0);
    expect(promSample(text, 'rft_grades_total', { grader: 'broken', outcome: 'error' })).toBeGreaterThanOrEqual(0);
    expect(promSample(text, 'rft_failures_total', { kind: 'infra', where: 'restart' })).toBeGreaterThanOrEqual(0);
  });
});

describe('tool call outcomes and whose failure each is', () => {
  const calls = (tool: string, outcome: string) => ({ tool, outcome });

  it('ok: counted with the handler time, no failure', async () => {
    const d = await delta('rft_tool_calls_total', calls('echo', 'ok'), () => post('/tools', functionCall('echo', { text: 'x' })));
    expect(d).toBe(1);
    expect(promSample(await scrape(), 'rft_tool_call_duration_seconds_count', { tool: 'echo' })).toBeGreaterThanOrEqual(1);
  });

  it('tool_error (the tool refused its input) is the model\'s failure', async () => {
    expect(await delta('rft_failures_total', { kind: 'model', where: 'tool' }, () => post('/tools', functionCall('fail', {})))).toBe(1);
    expect(promSample(await scrape(), 'rft_tool_calls_total', calls('fail', 'tool_error'))).toBeGreaterThanOrEqual(1);
  });

  it('invalid_arguments is the model\'s failure (where=arguments)', async () => {
    const d = await delta('rft_failures_total', { kind: 'model', where: 'arguments' }, () => post('/tools', functionCall('echo', '{"text":')));
    expect(d).toBe(1);
    expect(promSample(await scrape(), 'rft_tool_calls_total', calls('echo', 'invalid_arguments'))).toBeGreaterThanOrEqual(1);
  });

  it('timeout is an infrastructure failure (where=tool)', async () => {
    const d = await delta('rft_failures_total', { kind: 'infra', where: 'tool' }, () => post('/tools', functionCall('hang', {})));
    expect(d).toBe(1);
    expect(promSample(await scrape(), 'rft_tool_calls_total', calls('hang', 'timeout'))).toBeGreaterThanOrEqual(1);
  });

  it('budget_exhausted is the model\'s (where=budget); the handler time is not observed for it', async () => {
    const item = { tool_budget: 1 };
    const trace = newTrace();
    await post('/tools', functionCall('echo', { text: 'first' }, { trace_id: trace, item }));
    const before = promSample(await scrape(), 'rft_tool_call_duration_seconds_count', { tool: 'echo' });
    const d = await delta('rft_tool_calls_total', calls('echo', 'budget_exhausted'), () =>
      post('/tools', functionCall('echo', { text: 'x' }, { trace_id: trace, item })),
    );
    expect(d).toBe(1);
    expect(promSample(await scrape(), 'rft_tool_call_duration_seconds_count', { tool: 'echo' })).toBe(before);
  });

  it('replayed: a retry of a recorded call, not a failure', async () => {
    const call = functionCall('echo', { text: 'again' });
    await post('/tools', call);
    const failures = promSample(await scrape(), 'rft_failures_total');
    expect(await delta('rft_tool_calls_total', calls('echo', 'replayed'), () => post('/tools', call))).toBe(1);
    expect(promSample(await scrape(), 'rft_failures_total')).toBe(failures);
  });

  it('interrupted: the retry of a call a restart interrupted is an infrastructure failure (where=restart), counted once', async () => {
    const call = functionCall('echo', { text: 'lost' });
    const args = canonicalJson({ text: 'lost' });
    await s.app.rft.store.beginCall({
      traceId: call.trace_id, callId: call.call_id, tool: 'echo', arguments: args, argsHash: sha256('echo', args), cost: 1,
      budgetLimit: 10, item: {}, credential: null, now: Date.now(), overBudgetOutput: '',
    });
    await s.app.rft.store.markInterrupted(INTERRUPTED_OUTPUT, Date.now());
    const d = await delta('rft_failures_total', { kind: 'infra', where: 'restart' }, async () => {
      const res = await post('/tools', call);
      expect(res.statusCode).toBe(503);
      expect(res.json().error.code).toBe('RFT_ERR_CALL_INTERRUPTED');
    });
    expect(d).toBe(1);
    expect(promSample(await scrape(), 'rft_tool_calls_total', calls('echo', 'interrupted'))).toBe(1);
  });

  it('times each request by route template and status, whatever the URL', async () => {
    await post('/tools/echo', functionCall('echo', { text: 'x' }));
    await post('/tools/nope', functionCall('nope', {}));
    const text = await scrape();
    expect(promSample(text, 'rft_http_request_duration_seconds_count', { route: '/tools/:name', status: '200' })).toBeGreaterThanOrEqual(1);
    expect(promSample(text, 'rft_http_request_duration_seconds_count', { route: '/tools/:name', status: '404' })).toBeGreaterThanOrEqual(1);
    expect(text).not.toContain('route="/tools/echo"');
  });
});

describe('grades', () => {
  const grade = (grader: string, body: unknown) => post(`/graders/${grader}`, body);

  it('counts ok grades with their score, the graded rollout\'s tool calls and budget exhaustion', async () => {
    const trace = newTrace();
    const item = { reference_answer: '42', tool_budget: 2 };
    for (const text of ['a', 'b', 'c']) await post('/tools', functionCall('echo', { text }, { trace_id: trace, item }));
    const before = await scrape();
    const res = await grade('exact', { sample: { output_text: '42' }, item, trace_id: trace });
    expect(res.json()).toEqual({ score: 1 });
    const after = await scrape();
    const d = (name: string, labels: Record<string, string>) => (promSample(after, name, labels) ?? 0) - (promSample(before, name, labels) ?? 0);
    expect(d('rft_grades_total', { grader: 'exact', outcome: 'ok' })).toBe(1);
    expect(d('rft_grade_score_bucket', { grader: 'exact', le: '1' })).toBe(1);
    expect(d('rft_grade_score_bucket', { grader: 'exact', le: '0.9' })).toBe(0);
    expect(d('rft_rollout_tool_calls_sum', { grader: 'exact' })).toBe(3);
    expect(d('rft_budget_exhausted_rollouts_total', { grader: 'exact' })).toBe(1);
    // the trainer's retry of the grade
    const again = await delta('rft_grades_total', { grader: 'exact', outcome: 'replayed' }, () =>
      grade('exact', { sample: { output_text: '42' }, item, trace_id: trace }),
    );
    expect(again).toBe(1);
  });

  it("counts a grader's crash as an error and an infrastructure failure (where=grader): the reply is a 5xx", async () => {
    const d = await delta('rft_failures_total', { kind: 'infra', where: 'grader' }, async () => {
      const res = await grade('broken', { sample: { output_text: 'x' }, item: {}, trace_id: newTrace() });
      expect(res.statusCode).toBe(500);
    });
    expect(d).toBe(1);
    expect(promSample(await scrape(), 'rft_grades_total', { grader: 'broken', outcome: 'error' })).toBeGreaterThanOrEqual(1);
  });
});

describe('RFT_METRICS', () => {
  it('false: no /metrics route, and the tool path works the same', async () => {
    const off = await startFixtureServer({ listen: false, env: { RFT_METRICS: 'false' } });
    try {
      expect((await off.app.inject({ method: 'GET', url: '/metrics', headers: bearer(off.key) })).statusCode).toBe(404);
      const res = await off.app.inject({ method: 'POST', url: '/tools', headers: bearer(off.key), payload: functionCall('echo', { text: 'y' }) });
      expect(res.json().output).toBe('y');
    } finally {
      await off.close();
    }
  });

  it('RFT_METRICS_PORT: a second listener serves /metrics without credentials, and nothing else', async () => {
    const srv = await startFixtureServer({ env: { RFT_METRICS_PORT: '0' } });
    try {
      const url = srv.app.rft.metricsListener?.url;
      expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
      const res = await fetch(url!);
      expect(res.status).toBe(200);
      expect(await res.text()).toContain('rft_tool_calls_total');
      expect((await fetch(url!.replace('/metrics', '/tools'), { method: 'POST' })).status).toBe(404);
      expect((await fetch(`${srv.url}/metrics`)).status).toBe(401);
    } finally {
      await srv.close();
    }
  });
});

describe('the warm pool in /metrics', () => {
  it('shows the pool read at scrape time: warm, target, predicted step, hits and misses', async () => {
    const m = new Metrics({ processMetrics: false });
    const text0 = await m.text();
    expect(promSample(text0, 'rft_sandbox_pool', { state: 'warm' })).toBe(0);
    m.watchSandboxes(() => ({ live: 3, queued: 0, pool: { warm: 497, target: 500, predicted: 500, hits: 499, misses: 501 } }));
    const text = await m.text();
    expect(promSample(text, 'rft_sandbox_pool', { state: 'warm' })).toBe(497);
    expect(promSample(text, 'rft_sandbox_pool', { state: 'target' })).toBe(500);
    expect(promSample(text, 'rft_sandbox_pool_predicted_step', {})).toBe(500);
    expect(promSample(text, 'rft_sandbox_pool_takes_total', { outcome: 'hit' })).toBe(499);
    expect(promSample(text, 'rft_sandbox_pool_takes_total', { outcome: 'miss' })).toBe(501);
    expect(promSample(await m.text(), 'rft_sandbox_pool_takes_total', { outcome: 'hit' })).toBe(499); // read, not added up
  });
});
