// The official `openai` SDK, unchanged, against the real server over HTTP:
// new OpenAI({ baseURL: <server>/v1, apiKey: <key> }).fineTuning.alpha.graders.run() / .validate().
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI, { AuthenticationError, BadRequestError } from 'openai';
import { startFixtureServer } from '../../helpers/fixtures.js';
import type { TestServer } from '../../helpers/server.js';
import { startFakeOpenAI, type FakeOpenAI } from '../../helpers/fake-openai.js';

let s: TestServer;
let model: FakeOpenAI;
let client: OpenAI;
beforeAll(async () => {
  model = await startFakeOpenAI();
  s = await startFixtureServer({ env: { OPENAI_BASE_URL: model.baseURL, OPENAI_API_KEY: model.apiKey, RFT_MODEL_MAX_RETRIES: '0' } });
  client = new OpenAI({ baseURL: `${s.url}/v1`, apiKey: s.key, maxRetries: 0 });
});
afterAll(async () => {
  await s.close();
  await model.close();
});

const check = { type: 'string_check', name: 'exact', input: '{{sample.output_text}}', reference: '{{item.answer}}', operation: 'eq' } as const;

/** Every key the SDK's GraderRunResponse declares, and no other. */
function expectRunShape(r: OpenAI.FineTuning.Alpha.GraderRunResponse) {
  expect(Object.keys(r).sort()).toEqual(['metadata', 'model_grader_token_usage_per_model', 'reward', 'sub_rewards']);
  expect(Object.keys(r.metadata).sort()).toEqual(['errors', 'execution_time', 'name', 'sampled_model_name', 'scores', 'token_usage', 'type']);
  expect(Object.keys(r.metadata.errors).sort()).toEqual([
    'formula_parse_error', 'invalid_variable_error', 'model_grader_parse_error', 'model_grader_refusal_error', 'model_grader_server_error',
    'model_grader_server_error_details', 'other_error', 'python_grader_runtime_error', 'python_grader_runtime_error_details',
    'python_grader_server_error', 'python_grader_server_error_type', 'sample_parse_error', 'truncated_observation_error', 'unresponsive_reward_error',
  ]);
  expect(typeof r.reward).toBe('number');
  expect(typeof r.metadata.execution_time).toBe('number');
}

describe('the openai SDK\'s grader helpers', () => {
  it('runs a string_check grader', async () => {
    const r = await client.fineTuning.alpha.graders.run({ grader: check, model_sample: '42', item: { answer: '42' } });
    expectRunShape(r);
    expect(r.reward).toBe(1);
    expect(r.metadata).toMatchObject({ name: 'exact', type: 'string_check', token_usage: null, sampled_model_name: null, scores: { exact: 1 } });
    expect(r.model_grader_token_usage_per_model).toEqual({});
  });

  it('runs a score_model grader and reports its model and tokens', async () => {
    const judge: OpenAI.Graders.ScoreModelGrader = {
      type: 'score_model',
      name: 'judge',
      model: 'judge-model',
      input: [{ role: 'user', content: 'Grade: {{sample.output_text}} against {{item.answer}}' }],
    };
    const r = await client.fineTuning.alpha.graders.run({ grader: judge, model_sample: 'Paris', item: { answer: 'Paris' } });
    expectRunShape(r);
    expect(r.reward).toBe(1);
    expect(r.metadata.sampled_model_name).toBe('judge-model');
    expect(r.metadata.token_usage).toBeGreaterThan(0);
    const usage = r.model_grader_token_usage_per_model['judge-model'] as { total_tokens: number };
    expect(usage.total_tokens).toBe(r.metadata.token_usage);
  });

  it('answers a grader that cannot run with its error flag, as OpenAI does', async () => {
    const r = await client.fineTuning.alpha.graders.run({ grader: check, model_sample: '42', item: {} });
    expectRunShape(r);
    expect(r.metadata.errors.invalid_variable_error).toBe(true);
  });

  it('validates a grader, and reports a bad one as the SDK\'s BadRequestError with our code', async () => {
    const v = await client.fineTuning.alpha.graders.validate({ grader: check });
    expect(v.grader).toMatchObject({ type: 'string_check', name: 'exact' });
    const bad = await client.fineTuning.alpha.graders.validate({ grader: { ...check, operation: 'equals' as 'eq' } }).catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(BadRequestError);
    expect((bad as BadRequestError).code).toBe('RFT_ERR_GRADER_CONFIG');
  });

  it('refuses a wrong key as the SDK\'s AuthenticationError', async () => {
    const wrong = new OpenAI({ baseURL: `${s.url}/v1`, apiKey: 'wrong-key-0123456789abcdef', maxRetries: 0 });
    const e = await wrong.fineTuning.alpha.graders.validate({ grader: check }).catch((err: unknown) => err);
    expect(e).toBeInstanceOf(AuthenticationError);
    expect((e as AuthenticationError).code).toBe('RFT_ERR_AUTH_INVALID');
  });
});
