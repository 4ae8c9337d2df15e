// Run labels: the x-rft-run header on /tools and the grader routes labels a rollout; the record, the
// rollout list, the stats and the export carry it; a label that is not one is a coded 400 before
// anything is recorded.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, functionCall, newTrace, startFixtureServer } from '../helpers/fixtures.js';
import type { TestServer } from '../helpers/server.js';

describe('run labels (x-rft-run)', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startFixtureServer();
  });
  afterAll(() => s.close());
  const get = (url: string) => s.app.inject({ method: 'GET', url, headers: bearer(s.key) });
  const tool = (trace: string, run?: string) =>
    s.app.inject({ method: 'POST', url: '/tools', headers: { ...bearer(s.key), ...(run !== undefined ? { 'x-rft-run': run } : {}) }, payload: functionCall('echo', { text: 'a' }, { trace_id: trace }) });
  const grade = (trace: string, answer: string, run?: string) =>
    s.app.inject({
      method: 'POST',
      url: '/graders/exact',
      headers: { ...bearer(s.key), ...(run !== undefined ? { 'x-rft-run': run } : {}) },
      payload: { sample: { output_text: answer }, item: { reference_answer: '1' }, trace_id: trace },
    });

  it("labels a rollout from its first call's header (or its grade's), and the list, stats and record split the runs", async () => {
    const [a, b, none] = [newTrace(), newTrace(), newTrace()];
    expect((await tool(a, 'baseline 1')).statusCode).toBe(200);
    expect((await grade(a, '1', 'baseline 1')).statusCode).toBe(200);
    expect((await grade(b, '0', 'job/2')).statusCode).toBe(200); // a rollout with no tool call: its grade labels it
    expect((await tool(none)).statusCode).toBe(200);
    expect((await grade(none, '1')).statusCode).toBe(200);

    expect((await get(`/v1/rollouts/${a}`)).json()).toMatchObject({ run: 'baseline 1' });
    expect((await get(`/v1/rollouts/${none}`)).json()).toMatchObject({ run: null });
    const listed = async (run: string) => (await get(`/v1/rollouts?run=${encodeURIComponent(run)}`)).json().rollouts.map((r: { trace_id: string; run: string }) => [r.trace_id, r.run]);
    expect(await listed('baseline 1')).toEqual([[a, 'baseline 1']]);
    expect(await listed('job/2')).toEqual([[b, 'job/2']]);

    const curve = async (run: string) => {
      const body = (await get(`/v1/stats?since=5m&bucket=1m&run=${encodeURIComponent(run)}`)).json();
      const exact = body.learning_curve.find((c: { grader: string }) => c.grader === 'exact');
      return { started: body.totals.rollouts_started, graded: body.totals.rollouts_graded, calls: body.totals.tool_calls, scores: exact.mean_score.filter((x: number | null) => x !== null) };
    };
    expect(await curve('baseline 1')).toEqual({ started: 1, graded: 1, calls: 1, scores: [1] });
    expect(await curve('job/2')).toEqual({ started: 1, graded: 1, calls: 0, scores: [0] });
  });

  it('refuses a label that is not one with RFT_ERR_BAD_RUN_LABEL (400), recording nothing', async () => {
    for (const bad of ['', ' lead', 'trail ', 'x'.repeat(65), 'tab\there']) {
      const trace = newTrace();
      for (const res of [await tool(trace, bad), await grade(trace, '1', bad)]) {
        expect(res.statusCode, JSON.stringify(bad)).toBe(400);
        expect(res.json().error.code).toBe('RFT_ERR_BAD_RUN_LABEL');
      }
      expect((await get(`/v1/rollouts/${trace}`)).statusCode).toBe(404);
    }
    expect((await tool(newTrace(), 'x'.repeat(64))).statusCode).toBe(200);
  });
});
