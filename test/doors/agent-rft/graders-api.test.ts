import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, startFixtureServer } from '../../helpers/fixtures.js';
import type { TestServer } from '../../helpers/server.js';

let s: TestServer;
beforeAll(async () => {
  s = await startFixtureServer({ listen: false });
});
afterAll(() => s.close());

const post = (url: string, payload: unknown) => s.app.inject({ method: 'POST', url, headers: bearer(s.key), payload: payload as object });
const check = { type: 'string_check', name: 'exact', input: '{{sample.output_text}}', reference: '{{item.answer}}', operation: 'eq' };

describe('OpenAI grader API, run locally', () => {
  it('runs a config with OpenAI model_sample and answers the graders/run shape', async () => {
    const res = await post('/v1/graders/run', { grader: check, model_sample: '42', item: { answer: '42' } });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ reward: 1, metadata: { name: 'exact', type: 'string_check' } });
  });

  it('accepts our full sample object too', async () => {
    const res = await post('/v1/graders/run', { grader: check, sample: { output_text: '41' }, item: { answer: '42' } });
    expect(res.json().reward).toBe(0);
  });

  it('reports a template path that does not resolve as OpenAI does, with its error flag', async () => {
    const res = await post('/v1/graders/run', { grader: check, model_sample: '42', item: {} });
    expect(res.statusCode).toBe(200);
    expect(res.json().metadata.errors.invalid_variable_error).toBe(true);
  });

  it('validates a config and points at the bad field', async () => {
    expect((await post('/v1/graders/validate', { grader: check })).json().grader).toMatchObject({ type: 'string_check' });
    const bad = await post('/v1/graders/validate', { grader: { ...check, operation: 'equals' } });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().error.code).toBe('RFT_ERR_GRADER_CONFIG');
    expect(bad.json().error.details.path).toBe('operation');
  });

  it('validates a python grader config', async () => {
    const res = await post('/v1/graders/validate', { grader: { type: 'python', name: 'p', source: 'def grade(s, i): return 1' } });
    expect(res.json().grader.type).toBe('python');
  });
});
