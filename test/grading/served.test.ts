// JSON graders served by the real server over HTTP, with model graders against the fake OpenAI API.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai.js';
import { comboGraderConfig } from '../helpers/fixtures.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

let dir: string;
let fake: FakeOpenAI;
let server: TestServer;

beforeAll(async () => {
  fake = await startFakeOpenAI();
  dir = mkdtempSync(join(tmpdir(), 'served-graders-'));
  mkdirSync(join(dir, 'graders'));
  mkdirSync(join(dir, 'tools'));
  writeFileSync(
    join(dir, 'graders', 'judge.json'),
    JSON.stringify({
      type: 'score_model',
      name: 'Judge (free text name)',
      model: 'judge-model',
      range: [0, 10],
      input: [{ role: 'user', content: '{{sample.output_text}} vs {{item.reference_answer}}' }],
    }),
  );
  writeFileSync(join(dir, 'graders', 'combo.json'), JSON.stringify(comboGraderConfig));
  server = await startTestServer({
    gradersDir: join(dir, 'graders'),
    toolsDir: join(dir, 'tools'),
    env: { OPENAI_BASE_URL: fake.baseURL, OPENAI_API_KEY: fake.apiKey },
  });
});
afterAll(async () => {
  await server?.close();
  await fake?.close();
  rmSync(dir, { recursive: true, force: true });
});

async function post(path: string, body: unknown) {
  const res = await fetch(`${server.url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${server.key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> & { error?: { code: string } } };
}

const call = (text: string) => ({ sample: { output_text: text }, item: { reference_answer: 'Paris' }, trace_id: `trace_${crypto.randomUUID()}` });

describe('JSON graders served by the server', () => {
  it('answers a score_model grade with the normalized reward', async () => {
    const r = await post('/graders/judge', call('[[fake:score=8]] Paris'));
    expect(r).toEqual({ status: 200, body: { score: 0.8 } });
  });

  it('answers a multi grade with the formula over sub-rewards', async () => {
    const r = await post('/graders/combo', call('Pari'));
    expect(r.status).toBe(200);
    expect(r.body.score).toBeCloseTo(0.5 * (8 / 9), 12);
  });

  it('answers 5xx with the model grader code when the judge refuses, so the trainer retries', async () => {
    const r = await post('/graders/judge', call('[[fake:refusal]]'));
    expect(r.status).toBe(502);
    expect(r.body.error?.code).toBe('RFT_ERR_MODEL_GRADER');
  });

  it('answers 500 RFT_ERR_GRADER_FAILED when a template path is missing from the row', async () => {
    const r = await post('/graders/combo', { sample: { output_text: 'x' }, item: {}, trace_id: `trace_${crypto.randomUUID()}` });
    expect(r.status).toBe(500);
    expect(r.body.error?.code).toBe('RFT_ERR_GRADER_FAILED');
    expect(JSON.stringify(r.body)).toContain('RFT_ERR_TEMPLATE_PATH');
  });

  it('scores an answer with no final text (it does not answer 500: a discarded rollout would pay the model for it)', async () => {
    for (const sample of [{ output_text: null }, {}, { output_text: null, output_json: null }]) {
      const r = await post('/graders/combo', { sample, item: { reference_answer: 'Paris' }, trace_id: `trace_${crypto.randomUUID()}` });
      expect(r).toEqual({ status: 200, body: { score: 0 } });
    }
  });

  it('runs a config through /v1/graders/run in the OpenAI reply shape', async () => {
    const r = await post('/v1/graders/run', {
      grader: { type: 'text_similarity', name: 'sim', input: '{{sample.output_text}}', reference: '{{item.reference_answer}}', evaluation_metric: 'rouge_1' },
      model_sample: 'Paris France',
      item: { reference_answer: 'Paris' },
    });
    expect(r.status).toBe(200);
    expect(r.body.reward).toBeCloseTo(2 / 3, 12);
    expect(r.body).toMatchObject({ metadata: { name: 'sim', type: 'text_similarity', errors: { formula_parse_error: false } }, sub_rewards: {} });
  });

  it('refuses an invalid config at /v1/graders/validate with the field path', async () => {
    const r = await post('/v1/graders/validate', { grader: { type: 'string_check', name: 'x', input: 'a', reference: 'b', operation: 'contains' } });
    expect(r.status).toBe(400);
    expect(r.body.error?.code).toBe('RFT_ERR_GRADER_CONFIG');
    expect(JSON.stringify(r.body)).toContain('operation');
  });
});
