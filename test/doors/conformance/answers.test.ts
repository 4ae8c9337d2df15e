// Every door against the same adversarial answers and rows (issue 37; docs/door-failures.md), as a table of
// doors x cases:
// - an answer that is deeply nested JSON text is the model's: scored 0 with the door's normal success reply,
//   never a 5xx (or an error frame, a cut stream, judge_failed) that the trainer turns into a discarded or
//   rerun rollout; with a TS grader (answer_match) and with an OpenAI python grader (2,000 levels broke
//   Python's json.loads in it);
// - a row (a NeMo Gym seed row, a reward label, an Agent RFT item) nested too deep is the row's: the door's 400;
// - a row its grader cannot read is refused at the start of its rollout, on every door that has a start.
// The clients are replayed as test/helpers cite them; deep bodies are written as text (the helpers'
// JSON.stringify would overflow on them, as a Python client would not).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { repoRoot, startTestServer, type TestServer } from '../../helpers/server.js';
import { simpleAgentRun } from '../../helpers/nemo-gym-client.js';
import { HttpStatusError, OrsClient } from '../../helpers/ors-client.js';
import { EnvClient, ServerError } from '../../helpers/openenv-client.js';
import { mcpPost } from '../../helpers/openenv-mcp.js';
import { openRlhfFetchRewards, slimeRemoteRm } from '../../helpers/reward-clients.js';
import { describeIf } from '../../helpers/require.js';
import { failureClass, graderCouldNotScore } from '../../../src/doors/core.js';
import { errors } from '../../../src/errors.js';
import { driverCases } from '../../helpers/sandboxes.js';

type Row = Record<string, unknown>;
const train = readFileSync(join(repoRoot, 'examples/finqa/train.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Row);
const fieldsOf = ({ messages: _m, tools: _t, ...fields }: Row): Row => fields;
const row0 = train[0]!;

/** `depth` levels of nested arrays, as JSON text. */
const nested = (depth: number): string => '['.repeat(depth) + ']'.repeat(depth);

/** A NeMo Gym row of finqa's row 0 (its tools flat, as Gym's rows carry them) with the grader's `fields`. */
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
const withDeepField = (body: Row, depth: number): string => JSON.stringify(body).replace(/}$/, `,"deep":${nested(depth)}}`);

const post = async (url: string, text: string, headers: Record<string, string> = {}) => {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: text });
  return { status: res.status, text: await res.text() };
};
const codeOf = (text: string): unknown => (JSON.parse(text) as { error?: { code?: unknown } }).error?.code;

/** A server with every door, and where each door is. */
interface Doors {
  server: TestServer;
  grader: string;
  gym: string;
  priv: string;
  ors: OrsClient;
}

async function bootDoors(env: Record<string, string>, grader: string, gradersDir?: string): Promise<Doors> {
  const server = await startTestServer({
    ...(gradersDir ? { gradersDir } : {}),
    env: { RFT_NEMO_GYM_PORT: '0', RFT_PRIVATE_PORT: '0', RFT_DEFAULT_GRADER: grader, RFT_SQLITE_SYNC: 'normal', ...env },
  });
  return { server, grader, gym: server.app.rft.nemoGym!.url, priv: server.app.rft.privateDoors!.url, ors: new OrsClient(server.url, { token: server.key, waitScale: 0.001 }) };
}

/**
 * The answer cases' table: each door submits the answer as its trainer's client does and returns the score it
 * read from the door's normal success reply (a failure reply fails the case): Agent RFT's 200 {score} (the
 * reference: its body parser cuts a sample.output_json past the depth cap to null), NeMo Gym's /verify 200
 * without judge_failed, ORS's end event (finished), OpenEnv's observation (done) on the socket and over HTTP, the /mcp submit's structured_content (done),
 * the reward door's 200 to slime and to OpenRLHF.
 */
const answerDoors: [string, (d: Doors, answer: string) => Promise<number>][] = [
  [
    'Agent RFT /graders',
    async (d, answer) => {
      const body = `{"sample":{"output_text":${JSON.stringify(answer)},"output_json":${answer},"output_tools":[],"choices":[]},"item":${JSON.stringify(fieldsOf(row0))},"trace_id":"deep-${Date.now()}-${Math.random()}"}`;
      const r = await post(`${d.server.url}/graders/${d.grader}`, body, { authorization: `Bearer ${d.server.key}` });
      expect(r.status, r.text.slice(0, 300)).toBe(200);
      return (JSON.parse(r.text) as { score: number }).score;
    },
  ],
  [
    'NeMo Gym /verify',
    async (d, answer) => {
      const ep = await simpleAgentRun(d.gym, gymRow(), () => ({ message: answer }));
      expect(ep.seed.status).toBe(200);
      expect(ep.verify.status, ep.verify.text.slice(0, 300)).toBe(200);
      expect(ep.result!._ng_failure_class).toBeUndefined();
      return ep.result!.reward as number;
    },
  ],
  [
    'ORS submit',
    async (d, answer) => {
      const out = await d.ors.session('finqa', { split: 'train', index: 0 }, (s) => s.callTool('submit', { answer }));
      expect(out.finished).toBe(true);
      return out.reward!;
    },
  ],
  [
    'OpenEnv WS submit',
    async (d, answer) => {
      const env = await new EnvClient(`${d.priv}/finqa`).connect();
      try {
        await env.reset({ split: 'train', index: 0 });
        const r = await env.step({ type: 'call_tool', tool_name: 'submit', arguments: { answer } });
        expect(r.done).toBe(true);
        return r.reward!;
      } finally {
        await env.close();
      }
    },
  ],
  [
    'OpenEnv HTTP step',
    async (d, answer) => {
      const r = await post(`${d.priv}/finqa/step`, JSON.stringify({ action: { type: 'call_tool', tool_name: 'submit', arguments: { answer } }, split: 'train', index: 0 }));
      expect(r.status, r.text.slice(0, 300)).toBe(200);
      const step = JSON.parse(r.text) as { reward: number; done: boolean };
      expect(step.done).toBe(true);
      return step.reward;
    },
  ],
  [
    'OpenEnv /mcp submit',
    async (d, answer) => {
      const url = `${d.priv}/finqa/mcp`;
      const sid = (await mcpPost(url, 'openenv/session/create', { split: 'train', index: 0 }, 1)).result!.session_id as string;
      const r = await mcpPost(url, 'tools/call', { name: 'submit', arguments: { answer }, session_id: sid }, 2);
      expect(r.status, JSON.stringify(r).slice(0, 300)).toBe(200);
      const done = r.result!.structured_content as { reward: number; done: boolean };
      expect(done.done).toBe(true);
      return done.reward;
    },
  ],
  [
    'reward, slime',
    async (d, answer) => {
      const run = await slimeRemoteRm(`${d.priv}/reward/${d.grader}`, { prompt: 'q', response: answer, label: JSON.stringify(fieldsOf(row0)) });
      expect(run.statuses).toEqual([200]);
      return run.result as number;
    },
  ],
  [
    'reward, OpenRLHF',
    async (d, answer) => {
      const prompt = '<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\n';
      const run = await openRlhfFetchRewards(`${d.priv}/reward/${d.grader}`, [`${prompt}${answer}<|im_end|>`], [prompt], [JSON.stringify(fieldsOf(row0))]);
      expect(run.statuses).toEqual([200]);
      return run.result!.rewards[0]!;
    },
  ],
];
const answerCases = answerDoors.flatMap(([door, run]) => [2_000, 200_000].map((depth) => ({ door, depth, run })));

/**
 * The deep-row cases' table: each posts a row or label `depth` levels deep and returns the door's replies:
 * Agent RFT's item (the reference), a NeMo Gym seed row's field, reward labels (slime's and OpenRLHF's, each
 * as an object and as its text).
 */
const deepRowDoors: [string, (d: Doors, depth: number) => Promise<{ status: number; text: string }[]>][] = [
  [
    'Agent RFT /graders item',
    (d, depth) => Promise.all([post(`${d.server.url}/graders/${d.grader}`, `{"sample":{"output_text":"1"},"item":${withDeepField(fieldsOf(row0), depth)},"trace_id":"deeprow-${depth}-${Date.now()}"}`, { authorization: `Bearer ${d.server.key}` })]),
  ],
  ['NeMo Gym /seed_session', (d, depth) => Promise.all([post(`${d.gym}/seed_session`, withDeepField(gymRow(), depth))])],
  [
    'reward labels',
    (d, depth) => {
      const label = withDeepField(fieldsOf(row0), depth);
      return Promise.all(
        [
          `{"prompt": "q", "response": "1", "label": ${label}}`,
          `{"prompt": "q", "response": "1", "label": ${JSON.stringify(label)}}`,
          `{"query": ["q1"], "prompts": ["q"], "labels": [${label}]}`,
          `{"query": ["q1"], "prompts": ["q"], "labels": [${JSON.stringify(label)}]}`,
        ].map((body) => post(`${d.priv}/reward/${d.grader}`, body)),
      );
    },
  ],
];
const deepRowCases = deepRowDoors.flatMap(([door, run]) => [5_000, 100_000].map((depth) => ({ door, depth, run })));

describe('the doors with a TS grader (answer_match)', () => {
  let d: Doors;
  beforeAll(async () => {
    d = await bootDoors({}, 'answer_match');
  });
  afterAll(() => d?.server.close());

  it.each(answerCases)('$door: an answer $depth levels deep is scored 0', async ({ run, depth }) => {
    expect(await run(d, nested(depth))).toBe(0);
  });

  it.each(deepRowCases)("$door: a row $depth levels deep is the door's 400", async ({ run, depth }) => {
    for (const r of await run(d, depth)) {
      expect(r.status, r.text.slice(0, 200)).toBe(400);
      expect(codeOf(r.text)).toMatch(/^RFT_ERR_(BODY|ROW)_TOO_DEEP$/);
    }
  });

  it('NeMo Gym: a row its grader cannot read is refused by /seed_session with a 400 (Gym: a bad row is a 400 at seed)', async () => {
    const ep = await simpleAgentRun(d.gym, gymRow({ answer_type: 'number' }), () => ({ message: '1' }));
    expect(ep.seed.status).toBe(400);
    expect(codeOf(ep.seed.text)).toBe('RFT_ERR_ROW_UNREADABLE');
    expect(ep.seed.cookies).toEqual({});
  });
});

/** A copy of examples/finqa as an environment of its own, its grader and first row changed. */
function finqaCopy(dir: string, o: { grader?: string; firstRow?: Row }): void {
  cpSync(join(repoRoot, 'examples/finqa'), join(dir, 'finqa'), { recursive: true });
  if (o.firstRow) writeFileSync(join(dir, 'finqa/train.jsonl'), [o.firstRow, ...train.slice(1)].map((r) => JSON.stringify(r)).join('\n') + '\n');
  if (o.grader) {
    const job = JSON.parse(readFileSync(join(dir, 'finqa/job.json'), 'utf8')) as { method: { reinforcement: { grader: Row } } };
    job.method.reinforcement.grader = { type: 'endpoint', name: o.grader, url: `https://YOUR-HOST/graders/${o.grader}` };
    writeFileSync(join(dir, 'finqa/job.json'), JSON.stringify(job));
  }
}

const bwrap = driverCases.find((c) => c.name === 'bwrap')!;
describeIf(bwrap.available, 'the doors with an OpenAI python grader', bwrap.reason)('the doors with an OpenAI python grader (bwrap)', () => {
  let d: Doors;
  const dir = mkdtempSync(join(tmpdir(), 'rft-pygrader-'));
  beforeAll(async () => {
    finqaCopy(join(dir, 'envs'), { grader: 'py_answer' });
    mkdirSync(join(dir, 'graders'));
    // output_json None (past the cap) is graded as its text, which is not the reference answer: 0.
    const source = 'def grade(sample, item):\n    j = sample.get("output_json")\n    t = sample["output_text"].strip()\n    return 1.0 if (j if j is not None else t) == item["reference_answer"] else 0.0';
    writeFileSync(join(dir, 'graders/py_answer.json'), JSON.stringify({ type: 'python', name: 'py_answer', source }));
    d = await bootDoors({ RFT_ENVIRONMENTS: join(dir, 'envs'), RFT_SANDBOX: 'bwrap' }, 'py_answer', join(dir, 'graders'));
  });
  afterAll(async () => {
    await d?.server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it.each(answerCases.filter((c) => c.depth === 2_000))('$door: an answer $depth levels deep is scored 0', async ({ run, depth }) => {
    expect(await run(d, nested(depth))).toBe(0);
  }, 60_000);

  it('scores a right answer 1 through the same doors (the grader reads what the door sent)', async () => {
    expect(await answerDoors[1]![1](d, String(row0.reference_answer))).toBe(1);
  }, 60_000);
});

describe('an environment row its grader cannot read is refused at the start of its rollout', () => {
  let d: Doors;
  const dir = mkdtempSync(join(tmpdir(), 'rft-badrow-'));
  beforeAll(async () => {
    const { reference_answer: _gone, ...bad } = row0;
    finqaCopy(dir, { firstRow: bad });
    d = await bootDoors({ RFT_ENVIRONMENTS: dir }, 'answer_match');
  });
  afterAll(async () => {
    await d?.server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('ORS: /create answers 400 (final for the client: no retry), and the good rows still start', async () => {
    const err = await d.ors.session('finqa', { split: 'train', index: 0 }, async () => 'started').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(HttpStatusError);
    expect((err as HttpStatusError).status).toBe(400);
    expect((err as HttpStatusError).message).toContain('RFT_ERR_ROW_UNREADABLE');
    await expect(d.ors.session('finqa', { split: 'train', index: 1 }, async () => 'started')).resolves.toBe('started');
  });

  it('OpenEnv: the reset answers an error frame that is not retryable (the socket stays usable); HTTP step a 400', async () => {
    const env = await new EnvClient(`${d.priv}/finqa`).connect();
    try {
      const err = await env.reset({ split: 'train', index: 0 }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ServerError);
      expect((err as ServerError).data).toMatchObject({ code: 'RFT_ERR_ROW_UNREADABLE', retryable: false });
      await expect(env.reset({ split: 'train', index: 1 })).resolves.toMatchObject({ done: false });
    } finally {
      await env.close();
    }
    const r = await post(`${d.priv}/finqa/step`, JSON.stringify({ action: { type: 'call_tool', tool_name: 'submit', arguments: { answer: '1' } }, split: 'train', index: 0 }));
    expect(r.status).toBe(400);
    expect(codeOf(r.text)).toBe('RFT_ERR_ROW_UNREADABLE');
  });

  it('OpenEnv /mcp: openenv/session/create answers a JSON-RPC -32602 not retryable, and the good rows still start', async () => {
    const url = `${d.priv}/finqa/mcp`;
    const r = await mcpPost(url, 'openenv/session/create', { split: 'train', index: 0 }, 1);
    expect(r).toMatchObject({ status: 200, error: { code: -32602, data: { code: 'RFT_ERR_ROW_UNREADABLE', retryable: false } } });
    expect((await mcpPost(url, 'openenv/session/create', { split: 'train', index: 1 }, 2)).result).toMatchObject({ session_id: expect.any(String) as string });
  });
});

describe('failureClass: whose failure an error is, for every door', () => {
  it.each([
    ['a tool the rollout does not offer, in a call', errors.unknownTool('x', []), 'call', 'model'],
    ['a malformed request at the start', errors.badRequest('x'), 'start', 'row'],
    ['a row the grader cannot read', errors.rowUnreadable('g', 'x'), 'start', 'row'],
    ['a row nested too deep, whatever the step', errors.rowTooDeep('the row', 64), 'call', 'row'],
    ['the grading service refusing the row (a 500)', errors.badRow('g', 'x'), 'grade', 'row'],
    ['the store', errors.store('x'), 'call', 'ours'],
    ['a sandbox slot not found in time', errors.sandboxQueueTimeout(1), 'call', 'ours'],
    ['a grader that could not score', errors.graderFailed('g', 'x'), 'grade', 'ours'],
    ['anything uncoded', new Error('x'), 'grade', 'ours'],
  ] as const)('%s: %s', (_what, e, step, expected) => {
    expect(failureClass(e, step)).toBe(expected);
  });

  it("tells a grader's failure (NeMo Gym's judge_failed) from the rest of ours", () => {
    expect(graderCouldNotScore(errors.graderFailed('g', 'x'))).toBe(true);
    expect(graderCouldNotScore(errors.graderBadScore('g', 'x'))).toBe(true);
    expect(graderCouldNotScore(errors.store('x'))).toBe(false);
    expect(graderCouldNotScore(errors.badRow('g', 'x'))).toBe(false);
  });
});
