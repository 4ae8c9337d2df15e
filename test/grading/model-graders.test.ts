// score_model, label_model and cosine through the real openai SDK against test/helpers/fake-openai.
import { createServer } from 'node:http';
import { once } from 'node:events';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validateGraderConfig } from '../../src/grading/config.js';
import { cosineOf } from '../../src/grading/cosine.js';
import { runGraderConfig } from '../../src/grading/run.js';
import { hashedEmbedding, startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai.js';
import { rejected } from '../helpers/codes.js';

let fake: FakeOpenAI;
let flaky: FakeOpenAI;
beforeAll(async () => {
  fake = await startFakeOpenAI();
  // Fails its first call with a 500, then answers: exercises the SDK retry.
  flaky = await startFakeOpenAI({
    chat: (_body, i) => (i === 0 ? { kind: 'status', status: 500 } : { kind: 'json', value: { steps: [], result: 0.25 } }),
  });
});
afterAll(async () => {
  await fake.close();
  await flaky.close();
});

const openai = () => ({ baseURL: fake.baseURL, apiKey: fake.apiKey, maxRetries: 0, timeoutMs: 5000 });
const sample = (output_text: string) => ({ output_text, output_json: null, output_tools: [] });
const item = { reference_answer: 'Paris' };

const judge = (prompt: string, extra: Record<string, unknown> = {}) =>
  validateGraderConfig({
    type: 'score_model',
    name: 'judge',
    model: 'judge-model',
    input: [
      { role: 'system', content: 'You grade answers.' },
      { role: 'user', content: `${prompt}\nReference: {{item.reference_answer}}\nAnswer: {{sample.output_text}}` },
    ],
    ...extra,
  });

describe('score_model', () => {
  it('normalizes the model result from range to 0..1', async () => {
    const r = await runGraderConfig(judge('[[fake:score=7]]', { range: [0, 10] }), sample('Paris'), item, { openai: openai() });
    expect(r.reward).toBeCloseTo(0.7, 12);
    expect(r.metadata.scores).toMatchObject({ judge: 0.7, 'judge.raw': 7 });
    expect(r.explanation).toBe('scripted verdict');
  });

  it('maps a range that does not start at 0', async () => {
    const r = await runGraderConfig(judge('[[fake:score=4]]', { range: [1, 5] }), sample('Paris'), item, { openai: openai() });
    expect(r.reward).toBeCloseTo(0.75, 12);
  });

  it('clamps a result outside the range and flags it', async () => {
    const r = await runGraderConfig(judge('[[fake:score=12]]', { range: [0, 10] }), sample('Paris'), item, { openai: openai() });
    expect(r.reward).toBe(1);
    expect(r.metadata.scores['judge.out_of_range']).toBe(1);
  });

  it('sends templated messages, structured output and sampling params', async () => {
    const before = fake.requests.length;
    await runGraderConfig(
      judge('[[fake:score=1]]', { sampling_params: { temperature: 0, seed: 42, max_completions_tokens: 300, top_p: 0.5 } }),
      sample('It is Paris'),
      item,
      { openai: openai() },
    );
    const req = fake.requests[before];
    expect(req?.path).toBe('/v1/chat/completions');
    expect(req?.authorization).toBe(`Bearer ${fake.apiKey}`);
    const body = req?.body as Record<string, unknown> & { messages: Array<{ role: string; content: string }> };
    expect(body.messages[1]?.content).toBe('[[fake:score=1]]\nReference: Paris\nAnswer: It is Paris');
    expect(body).toMatchObject({ model: 'judge-model', temperature: 0, seed: 42, max_completion_tokens: 300, top_p: 0.5 });
    expect(body.response_format).toMatchObject({ type: 'json_schema', json_schema: { name: 'score_model_result', strict: true } });
  });

  it('sums token usage into metadata', async () => {
    const r = await runGraderConfig(judge('[[fake:score=1]]'), sample('x'), item, { openai: openai() });
    expect(r.metadata.token_usage).toBe(18);
    expect(r.metadata.sampled_model_name).toBe('judge-model');
    expect(r.model_grader_token_usage_per_model).toEqual({ 'judge-model': { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18, cached_tokens: 0 } });
  });

  it.each([
    ['[[fake:refusal]]', 'refusal'],
    ['[[fake:malformed]]', 'unparseable'],
    ['[[fake:prose]]', 'unparseable'],
    ['[[fake:status=400]]', 'api'],
  ])('turns %s into RFT_ERR_MODEL_GRADER (%s)', async (marker, kind) => {
    const e = await rejected(runGraderConfig(judge(marker), sample('x'), item, { openai: openai() }));
    expect(e.code).toBe('RFT_ERR_MODEL_GRADER');
    expect(e.statusCode).toBe(502);
    expect(e.details).toEqual({ kind });
  });

  it.each([
    ['endless, chunked', false],
    ['declared too long', true],
  ])('aborts a reply (%s) past 32 MiB, reading no more of it: a coded 502, never the reply buffered whole', async (_, declareLength) => {
    // A broken or hostile model endpoint: 1 MiB chunks until the socket is closed, counted.
    let sent = 0;
    const endpoint = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', ...(declareLength ? { 'content-length': String(2 ** 40) } : {}) });
      const chunk = Buffer.alloc(1 << 20, 0x20);
      const more = () => {
        while (!res.destroyed && sent < 4 * 2 ** 30) {
          sent += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', more);
        }
      };
      res.on('close', () => res.removeAllListeners('drain'));
      more();
    }).listen(0, '127.0.0.1');
    await once(endpoint, 'listening');
    try {
      const baseURL = `http://127.0.0.1:${(endpoint.address() as { port: number }).port}/v1`;
      const e = await rejected(runGraderConfig(judge('x'), sample('x'), item, { openai: { baseURL, apiKey: 'k', maxRetries: 0, timeoutMs: 60_000 } }));
      expect(e.code).toBe('RFT_ERR_MODEL_GRADER');
      expect(e.statusCode).toBe(502);
      expect(e.details).toEqual({ kind: 'reply_too_large' });
      // the cap and what the sockets' buffers held, not gigabytes
      expect(sent).toBeLessThan(96 << 20);
    } finally {
      endpoint.closeAllConnections();
      endpoint.close();
    }
  });

  it('gives up after the configured timeout', async () => {
    const started = Date.now();
    const e = await rejected(
      runGraderConfig(judge('[[fake:delay=3000]]'), sample('x'), item, { openai: { ...openai(), timeoutMs: 200 } }),
    );
    expect(e.details).toEqual({ kind: 'timeout' });
    expect(Date.now() - started).toBeLessThan(2500);
  });

  it('retries a failed call when retries are configured', async () => {
    const r = await runGraderConfig(judge('x'), sample('x'), item, { openai: { baseURL: flaky.baseURL, apiKey: flaky.apiKey, maxRetries: 1 } });
    expect(r.reward).toBe(0.25);
    expect(flaky.requests.filter((q) => q.path === '/v1/chat/completions')).toHaveLength(2);
  });

  it('refuses to call a model without an API key', async () => {
    const saved = process.env.OPENAI_API_KEY;
    delete process.env.OPENAI_API_KEY;
    try {
      const e = await rejected(runGraderConfig(judge('x'), sample('x'), item, { openai: { baseURL: fake.baseURL } }));
      expect(e.details).toEqual({ kind: 'config' });
    } finally {
      if (saved !== undefined) process.env.OPENAI_API_KEY = saved;
    }
  });

  it('stops when the caller aborts', async () => {
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 100);
    const e = await rejected(runGraderConfig(judge('[[fake:delay=3000]]'), sample('x'), item, { openai: openai(), signal: ac.signal }));
    expect(e.details).toEqual({ kind: 'aborted' });
  });
});

describe('label_model', () => {
  const labeler = (prompt: string) =>
    validateGraderConfig({
      type: 'label_model',
      name: 'labeler',
      model: 'label-model',
      input: [{ role: 'user', content: `${prompt} {{sample.output_text}}` }],
      labels: ['correct', 'partly', 'wrong'],
      passing_labels: ['correct', 'partly'],
    });

  it('rewards 1 for a passing label and 0 for another', async () => {
    expect((await runGraderConfig(labeler('[[fake:label=partly]]'), sample('x'), item, { openai: openai() })).reward).toBe(1);
    expect((await runGraderConfig(labeler('[[fake:label=wrong]]'), sample('x'), item, { openai: openai() })).reward).toBe(0);
  });

  it('sends the labels as an enum in the schema', async () => {
    const before = fake.requests.length;
    await runGraderConfig(labeler(''), sample('x'), item, { openai: openai() });
    const rf = fake.requests[before]?.body.response_format as { json_schema: { schema: { properties: { result: { enum: string[] } } } } };
    expect(rf.json_schema.schema.properties.result.enum).toEqual(['correct', 'partly', 'wrong']);
  });

  it('refuses a label outside the set', async () => {
    const e = await rejected(runGraderConfig(labeler('[[fake:label=maybe]]'), sample('x'), item, { openai: openai() }));
    expect(e.details).toEqual({ kind: 'unparseable' });
  });
});

describe('text_similarity cosine', () => {
  const cos = validateGraderConfig({
    type: 'text_similarity',
    name: 'cos',
    input: '{{sample.output_text}}',
    reference: '{{item.reference_answer}}',
    evaluation_metric: 'cosine',
  });
  const ref = { reference_answer: 'revenue grew four percent in the third quarter' };

  it('is 1 for identical texts', async () => {
    const r = await runGraderConfig(cos, sample(ref.reference_answer), ref, { openai: openai() });
    expect(r.reward).toBeCloseTo(1, 6);
  });

  it('equals the cosine of the served embeddings (decoded from the SDK base64 transport)', async () => {
    const answer = 'revenue fell in the second quarter';
    const r = await runGraderConfig(cos, sample(answer), ref, { openai: { ...openai(), embeddingModel: 'emb-small' } });
    const expected = cosineOf(hashedEmbedding(answer), hashedEmbedding(ref.reference_answer));
    expect(r.reward).toBeCloseTo(expected, 6);
    expect(r.reward).toBeGreaterThan(0.2);
    expect(r.reward).toBeLessThan(0.9);
    expect(fake.requests.at(-1)?.body).toMatchObject({ model: 'emb-small', input: [answer, ref.reference_answer] });
  });

  it('settles an empty answer as 0 without calling the API', async () => {
    const before = fake.requests.length;
    const r = await runGraderConfig(cos, sample(''), ref, { openai: openai() });
    expect(r.reward).toBe(0);
    expect(fake.requests.length).toBe(before);
  });
});
