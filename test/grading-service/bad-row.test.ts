// A row without what the grader reads (its itemSchema) is never scored: a 0 would be trained on as
// the model's failure. The grade is refused with a 5xx code (the trainer drops the rollout), and the
// rollout is flagged bad_row in its record, the flag filter and the metrics.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, fixtureTools, newTrace } from '../helpers/fixtures.js';
import { repoRoot, startTestServer, type TestServer } from '../helpers/server.js';
import { promSample } from '../helpers/prom-text.js';

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer({ listen: false, toolsDir: fixtureTools, gradersDir: join(repoRoot, 'test/fixtures/units/row-graders') });
});
afterAll(() => s.close());

const post = (url: string, payload: unknown) => s.app.inject({ method: 'POST', url, headers: bearer(s.key), payload: payload as object });
const get = (url: string) => s.app.inject({ method: 'GET', url, headers: bearer(s.key) });
const sample = (text: string) => ({ output_text: text, output_json: null, output_tools: [], choices: [] });
const metric = async (name: string, labels: Record<string, string>) => promSample((await get('/metrics')).body, name, labels) ?? 0;

describe('a row that does not match the grader itemSchema', () => {
  it('is refused with RFT_ERR_BAD_ROW (a 5xx: the trainer drops the rollout), never scored 0', async () => {
    const trace = newTrace();
    const res = await post('/grade', { sample: sample('4.2'), item: { answer: '4.2' }, trace_id: trace });
    expect(res.statusCode).toBeGreaterThanOrEqual(500);
    expect(res.json().error).toMatchObject({ code: 'RFT_ERR_BAD_ROW', details: { grader: 'reference' } });
    expect(res.json().error.message).toContain('reference_answer');
    const rec = (await get(`/v1/rollouts/${trace}`)).json();
    expect(rec.grades).toEqual([expect.objectContaining({ grader: 'reference', status: 'error', score: null })]);
    expect(rec.grades[0].error).toMatch(/^RFT_ERR_BAD_ROW: /);
  });

  it('flags the rollout bad_row in its record, the flag filter and the metrics (a failure of the data, not ours or the model\'s)', async () => {
    const [flags, grades, failures] = await Promise.all([
      metric('rft_integrity_flags_total', { kind: 'bad_row' }),
      metric('rft_grades_total', { grader: 'reference', outcome: 'bad_row' }),
      metric('rft_failures_total', { kind: 'data', where: 'row' }),
    ]);
    const trace = newTrace();
    expect((await post('/graders/reference', { sample: sample('4.2'), item: { reference_answer: 4.2 }, trace_id: trace })).statusCode).toBe(500);
    const rec = (await get(`/v1/rollouts/${trace}`)).json();
    expect(rec.integrity_flags).toEqual([expect.objectContaining({ kind: 'bad_row', events: 1 })]);
    expect(rec.integrity_flags[0].detail).toContain('reference_answer');
    const listed = (await get('/v1/rollouts?flag=bad_row&limit=500')).json().rollouts.map((r: { trace_id: string }) => r.trace_id);
    expect(listed).toContain(trace);
    expect(await metric('rft_integrity_flags_total', { kind: 'bad_row' })).toBe(flags + 1);
    expect(await metric('rft_grades_total', { grader: 'reference', outcome: 'bad_row' })).toBe(grades + 1);
    expect(await metric('rft_failures_total', { kind: 'data', where: 'row' })).toBe(failures + 1);
    expect(await metric('rft_failures_total', { kind: 'infra', where: 'server' })).toBe(0);
  });

  it('counts in the stats (and the dashboard) as the data\'s failure, not an infrastructure one', async () => {
    const stats = (await get('/v1/stats?since=1h&include=grades')).json();
    expect(stats.totals.failures).toMatchObject({ infra: 0, data: 2 });
    expect(stats.learning_curve[0]).toMatchObject({ grader: 'reference' });
  });

  it('grades a row that matches, and leaves it unflagged', async () => {
    const trace = newTrace();
    const res = await post('/grade', { sample: sample('4.2'), item: { reference_answer: '4.2' }, trace_id: trace });
    expect(res.json()).toEqual({ score: 1 });
    expect((await get(`/v1/rollouts/${trace}`)).json().integrity_flags).toEqual([]);
  });
});
