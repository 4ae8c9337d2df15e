import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, startFixtureServer } from '../../helpers/fixtures.js';
import { startTestServer, type TestServer } from '../../helpers/server.js';
import { describeIf } from '../../helpers/require.js';
import { driverCases } from '../../helpers/sandboxes.js';

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

// /v1/graders/run with a python grader: a fresh sandbox of the server's driver, as when it grades a rollout.
const bwrapCase = driverCases.find((c) => c.name === 'bwrap')!;
describeIf(bwrapCase.available, 'python graders through /v1/graders/run (bwrap)', bwrapCase.reason)('python graders through /v1/graders/run (bwrap)', () => {
  let sb: TestServer;
  beforeAll(async () => {
    sb = await startTestServer({ env: { RFT_SANDBOX: 'bwrap' } });
  }, 60_000);
  afterAll(() => sb?.close());
  const run = (grader: unknown, text: string) =>
    sb.app.inject({ method: 'POST', url: '/v1/graders/run', headers: bearer(sb.key), payload: { grader, model_sample: text, item: { answer: 'forty two' } } });

  it('scores what grade(sample, item) computes, in a sandbox destroyed afterwards', async () => {
    const source = 'def grade(sample, item):\n    a, b = set(sample["output_text"].split()), set(item["answer"].split())\n    return len(a & b) / len(a | b)';
    const res = await run({ type: 'python', name: 'overlap', source }, 'forty two');
    expect(res.json()).toMatchObject({ reward: 1, metadata: { type: 'python' } });
    expect((await run({ type: 'python', name: 'overlap', source }, 'forty three')).json().reward).toBeCloseTo(1 / 3, 12);
    expect(sb.app.rft.sandboxes!.stats().live).toBe(0);
  }, 60_000);

  it('a grader that opens a socket is a runtime error, flagged as OpenAI flags it, never a score', async () => {
    const source = 'import socket\ndef grade(sample, item):\n    socket.create_connection(("127.0.0.1", 1), timeout=2)\n    return 1.0';
    const res = await run({ type: 'python', name: 'net', source }, 'x');
    expect(res.json()).toMatchObject({ reward: 0, metadata: { errors: { python_grader_runtime_error: true } } });
  }, 60_000);
});
