// Every door against the same adversarial answers and rows (issue 37; docs/door-failures.md): an answer
// that is deeply nested JSON text is the model's, scored 0 with the door's normal success reply (never a
// 5xx the trainer turns into a discarded or rerun rollout); a row nested too deep, or one its grader
// cannot read, is the row's: the door's bad-input reply, at the rollout's start on doors that have one.
// The clients are replayed as test/helpers cite them; deep bodies are written as text (the helpers'
// JSON.stringify would overflow on them, as a Python client would not).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { repoRoot, startTestServer, type TestServer } from '../../helpers/server.js';
import { simpleAgentRun } from '../../helpers/nemo-gym-client.js';
import { HttpStatusError, OrsClient } from '../../helpers/ors-client.js';
import { EnvClient, ServerError } from '../../helpers/openenv-client.js';
import { openRlhfFetchRewards, slimeRemoteRm } from '../../helpers/reward-clients.js';

type Row = Record<string, unknown>;
const train = readFileSync(join(repoRoot, 'examples/finqa/train.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Row);
const fieldsOf = ({ messages: _m, tools: _t, ...fields }: Row): Row => fields;
const row0 = train[0]!;

/** `depth` levels of nested arrays, as JSON text. */
const nested = (depth: number): string => '['.repeat(depth) + ']'.repeat(depth);
const DEPTHS = [2_000, 200_000];

/** A NeMo Gym row of finqa's row 0 (its tools flat, as Gym's rows carry them), with `extra` fields. */
const gymRow = (fields: Row = fieldsOf(row0)): Row => ({
  responses_create_params: {
    input: row0.messages,
    tools: (row0.tools as { function: { name: string; parameters: unknown } }[]).map((t) => ({ type: 'function', name: t.function.name, parameters: t.function.parameters, strict: true })),
  },
  ...fields,
  agent_ref: { name: 'rft_agent' },
  _ng_task_index: 0,
  _ng_rollout_index: 0,
});

/** A JSON body with `"deep": <depth levels>` spliced in as text. */
const withDeepField = (body: Row, depth: number, key = 'deep'): string => JSON.stringify(body).replace(/}$/, `,"${key}":${nested(depth)}}`);

const post = async (url: string, text: string, headers: Record<string, string> = {}) => {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: text });
  return { status: res.status, text: await res.text() };
};
const codeOf = (text: string): unknown => (JSON.parse(text) as { error?: { code?: unknown } }).error?.code;

describe('the doors on deep answers and bad rows', () => {
  let server: TestServer;
  let gym: string;
  let priv: string;
  let ors: OrsClient;
  beforeAll(async () => {
    server = await startTestServer({ env: { RFT_NEMO_GYM_PORT: '0', RFT_PRIVATE_PORT: '0', RFT_DEFAULT_GRADER: 'answer_match', RFT_SQLITE_SYNC: 'normal' } });
    gym = server.app.rft.nemoGym!.url;
    priv = server.app.rft.privateDoors!.url;
    ors = new OrsClient(server.url, { token: server.key, waitScale: 0.001 });
  });
  afterAll(() => server?.close());

  describe.each(DEPTHS)('an answer nested %i levels deep is scored 0 with the normal reply', (depth) => {
    const answer = nested(depth);

    it('Agent RFT /graders (the reference: its output_json is cut to null)', async () => {
      const body = `{"sample":{"output_text":${JSON.stringify(answer)},"output_json":${answer},"output_tools":[],"choices":[]},"item":${JSON.stringify(fieldsOf(row0))},"trace_id":"deep-${depth}-${Date.now()}"}`;
      const r = await post(`${server.url}/graders/answer_match`, body, { authorization: `Bearer ${server.key}` });
      expect(r.status).toBe(200);
      expect(JSON.parse(r.text)).toEqual({ score: 0 });
    });

    it('NeMo Gym /verify: 200, reward 0, not judge_failed', async () => {
      const ep = await simpleAgentRun(gym, gymRow(), () => ({ message: answer }));
      expect(ep.seed.status).toBe(200);
      expect(ep.verify.status).toBe(200);
      expect(ep.result).toMatchObject({ reward: 0 });
      expect(ep.result!._ng_failure_class).toBeUndefined();
    });

    it('ORS submit: the end event with reward 0 and finished', async () => {
      const out = await ors.session('finqa', { split: 'train', index: 0 }, (s) => s.callTool('submit', { answer }));
      expect(out).toMatchObject({ reward: 0, finished: true });
    });

    it('OpenEnv WebSocket submit: an observation with reward 0 and done', async () => {
      const env = await new EnvClient(`${priv}/finqa`).connect();
      try {
        await env.reset({ split: 'train', index: 0 });
        const r = await env.step({ type: 'call_tool', tool_name: 'submit', arguments: { answer } });
        expect(r).toMatchObject({ reward: 0, done: true });
      } finally {
        await env.close();
      }
    });

    it('OpenEnv HTTP step submit: 200 with reward 0 and done', async () => {
      const r = await post(`${priv}/finqa/step`, JSON.stringify({ action: { type: 'call_tool', tool_name: 'submit', arguments: { answer } }, split: 'train', index: 0 }));
      expect(r.status).toBe(200);
      expect(JSON.parse(r.text)).toMatchObject({ reward: 0, done: true });
    });

    it("reward door: slime's remote_rm and OpenRLHF's remote reward get 0", async () => {
      const slime = await slimeRemoteRm(`${priv}/reward/answer_match`, { prompt: 'q', response: answer, label: row0.reference_answer });
      expect(slime.statuses).toEqual([200]);
      expect(slime.result).toBe(0);
      const prompt = '<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\n';
      const rlhf = await openRlhfFetchRewards(`${priv}/reward/answer_match`, [`${prompt}${answer}<|im_end|>`], [prompt], [JSON.stringify(fieldsOf(row0))]);
      expect(rlhf.statuses).toEqual([200]);
      expect(rlhf.result).toMatchObject({ rewards: [0], scores: [0] });
    });
  });

  describe.each([5_000, 100_000])('a row nested %i levels deep is the door\'s 400', (depth) => {
    it('Agent RFT /graders (the reference)', async () => {
      const body = `{"sample":{"output_text":"1"},"item":${withDeepField(fieldsOf(row0), depth)},"trace_id":"deeprow-${depth}-${Date.now()}"}`;
      const r = await post(`${server.url}/graders/answer_match`, body, { authorization: `Bearer ${server.key}` });
      expect(r.status).toBe(400);
    });

    it('NeMo Gym /seed_session', async () => {
      const r = await post(`${gym}/seed_session`, withDeepField(gymRow(), depth));
      expect(r.status).toBe(400);
      expect(codeOf(r.text)).toMatch(/^RFT_ERR_/);
    });

    it('reward door: a slime label and an OpenRLHF label, as an object and as its text', async () => {
      const label = withDeepField(fieldsOf(row0), depth);
      for (const body of [
        `{"prompt": "q", "response": "1", "label": ${label}}`,
        `{"prompt": "q", "response": "1", "label": ${JSON.stringify(label)}}`,
        `{"query": ["q1"], "prompts": ["q"], "labels": [${label}]}`,
        `{"query": ["q1"], "prompts": ["q"], "labels": [${JSON.stringify(label)}]}`,
      ]) {
        const r = await post(`${priv}/reward/answer_match`, body);
        expect(r.status, body.slice(0, 60)).toBe(400);
        expect(codeOf(r.text)).toMatch(/^RFT_ERR_/);
      }
    });
  });

  describe('a row its grader cannot read', () => {
    const noReference: Row = { answer_type: 'number' };

    it('NeMo Gym: refused by /seed_session with a 400 (Gym: a bad row is a 400 at seed)', async () => {
      const ep = await simpleAgentRun(gym, gymRow(noReference), () => ({ message: '1' }));
      expect(ep.seed.status).toBe(400);
      expect(codeOf(ep.seed.text)).toBe('RFT_ERR_ROW_UNREADABLE');
    });
  });
});

describe('an environment row its grader cannot read is refused at the start of its rollout', () => {
  let server: TestServer;
  let priv: string;
  let ors: OrsClient;
  const dir = mkdtempSync(join(tmpdir(), 'rft-badrow-'));
  beforeAll(async () => {
    cpSync(join(repoRoot, 'examples/finqa'), join(dir, 'finqa'), { recursive: true });
    const { reference_answer: _gone, ...bad } = row0;
    writeFileSync(join(dir, 'finqa/train.jsonl'), [bad, ...train.slice(1)].map((r) => JSON.stringify(r)).join('\n') + '\n');
    server = await startTestServer({ env: { RFT_ENVIRONMENTS: dir, RFT_PRIVATE_PORT: '0', RFT_DEFAULT_GRADER: 'answer_match', RFT_SQLITE_SYNC: 'normal' } });
    priv = server.app.rft.privateDoors!.url;
    ors = new OrsClient(server.url, { token: server.key, waitScale: 0.001 });
  });
  afterAll(async () => {
    await server?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('ORS: /create answers 400 (final for the client, no retry)', async () => {
    const err = await ors.session('finqa', { split: 'train', index: 0 }, async () => 'started').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(HttpStatusError);
    expect((err as HttpStatusError).status).toBe(400);
    expect((err as HttpStatusError).message).toContain('RFT_ERR_ROW_UNREADABLE');
    // The good rows still run.
    await expect(ors.session('finqa', { split: 'train', index: 1 }, async () => 'started')).resolves.toBe('started');
  });

  it('OpenEnv: the reset answers an error frame that is not retryable; HTTP step a 400', async () => {
    const env = await new EnvClient(`${priv}/finqa`).connect();
    try {
      const err = await env.reset({ split: 'train', index: 0 }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ServerError);
      expect((err as ServerError).data).toMatchObject({ code: 'RFT_ERR_ROW_UNREADABLE', retryable: false });
      // The socket stays usable for the next reset.
      await expect(env.reset({ split: 'train', index: 1 })).resolves.toMatchObject({ done: false });
    } finally {
      await env.close();
    }
    const r = await post(`${priv}/finqa/step`, JSON.stringify({ action: { type: 'call_tool', tool_name: 'submit', arguments: { answer: '1' } }, split: 'train', index: 0 }));
    expect(r.status).toBe(400);
    expect(codeOf(r.text)).toBe('RFT_ERR_ROW_UNREADABLE');
  });
});
