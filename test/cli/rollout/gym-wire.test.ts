// `rollout --door nemo-gym` on the wire: what the emulator sends is what Gym's simple_agent sends
// (responses_api_agents/simple_agent/app.py, nemo_gym/server_utils.py, Gym 07d6b0d). A recording
// resources server on 127.0.0.1 checks the client side alone: each request's cookies are the previous
// reply's Set-Cookie and nothing else, calls go one at a time in order, arguments that do not parse
// never leave the agent, and /verify gets the run request with the whole episode. The real door is
// exercised by rollout-gym.test.ts.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GymRolloutResult } from '../../../src/cli/rollout/gym.js';
import { SESSION_COOKIE } from '../../../src/doors/nemo-gym/app.js';
import { traceIdOf } from '../../../src/doors/nemo-gym/sessions.js';
import { startScriptedModel, type ScriptedModel } from '../../helpers/scripted-model.js';
import { readJsonl, removeTempDirs, runCli, tempDir, writeJsonl } from '../harness.js';

interface Seen {
  path: string;
  cookie: string | undefined;
  contentType: string | undefined;
  body: string;
}

let seen: Seen[];
let inFlight = 0;
let maxInFlight = 0;
let door: { url: string; close: () => Promise<void> };
let model: ScriptedModel;
const fedBack: string[][] = [];

/** Task 0 plays out fully; 1 is a grader that could not grade; 2 answers components that do not add up; 3 a /verify 500. */
function verifyReply(body: Record<string, unknown>): [number, unknown] {
  const task = body._ng_task_index;
  if (task === 1) return [200, { ...body, reward: 0, reward_components: { g: 0 }, _ng_failure_class: 'judge_failed' }];
  if (task === 2) return [200, { ...body, reward: 0.5, reward_components: { a: 0.25, b: 0.5 } }];
  if (task === 3) return [500, { error: 'store down' }];
  return [200, { ...body, reward: 0.75, reward_components: { a: 0.5, b: 0.25 } }];
}

async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
  inFlight++;
  maxInFlight = Math.max(maxInFlight, inFlight);
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const body = Buffer.concat(chunks).toString('utf8');
  const path = req.url ?? '/';
  if (req.method === 'POST') seen.push({ path, cookie: req.headers.cookie, contentType: req.headers['content-type'], body });
  // Replies take a moment, so that calls sent at once would overlap here.
  await new Promise((r) => setTimeout(r, 15));
  const send = (status: number, text: string, cookie?: string) => {
    res.writeHead(status, { 'content-type': 'application/json', ...(cookie ? { 'set-cookie': `${cookie}; Path=/; HttpOnly` } : {}) });
    inFlight--;
    res.end(text);
  };
  if (path === '/v1/tools') return send(200, '{"tools":[]}');
  if (path.startsWith('/v1/rollouts/')) return send(200, '{"budget":{"exceeded":false}}');
  if (path === '/') return send(404, '{"detail":"Not Found"}');
  if (path === '/seed_session') return send(200, '{}', `${SESSION_COOKIE}=A${(JSON.parse(body) as { _ng_task_index: number })._ng_task_index}`);
  if (path === '/a') return send(500, 'boom', 'sess=B'); // a status is an output like any other
  if (path === '/c') return send(200, 'c-out'); // no Set-Cookie: the next request goes without
  if (path === '/d') return send(404, 'nope', 'sess=C');
  if (path === '/verify') {
    const [status, reply] = verifyReply(JSON.parse(body) as Record<string, unknown>);
    return send(status, JSON.stringify(reply), 'sess=C');
  }
  send(404, 'unknown');
}

const tool = (name: string) => ({ type: 'function', function: { name, parameters: { type: 'object', properties: {} } } });
const row = (q: string) => ({ messages: [{ role: 'user', content: q }], tools: ['a', 'b', 'c', 'd'].map(tool), reference_answer: '4.2' });

beforeAll(async () => {
  seen = [];
  const server = createServer((req, res) => void handle(req, res));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  door = {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))),
  };
  model = await startScriptedModel({
    script: (ctx) => {
      if (ctx.turn > 0) fedBack.push(ctx.toolOutputs);
      if (ctx.turn === 0) return { calls: [{ name: 'a', arguments: { q: 1 } }, { name: 'b', arguments: '{not json' }, { name: 'c', arguments: 'null' }] };
      if (ctx.turn === 1) return { calls: [{ name: 'd', arguments: {} }] };
      return { text: 'Answer: 4.2' };
    },
  });
});

afterAll(async () => {
  await model?.close();
  await door?.close();
  removeTempDirs();
});

describe('rollout --door nemo-gym, as simple_agent sends it', () => {
  let results: GymRolloutResult[];

  it('runs every row through seed, the calls in order and verify', async () => {
    const dir = tempDir();
    const dataset = join(dir, 'rows.jsonl');
    writeJsonl(dataset, [row('q0'), row('q1'), row('q2'), row('q3')]);
    const out = join(dir, 'out.jsonl');
    const r = await runCli([
      'rollout', '--door', 'nemo-gym', '--door-url', door.url, '--server', door.url, '--key', 'k', '--dataset', dataset,
      '--model', 'scripted', '--base-url', model.baseURL, '--out', out, '--concurrency', '1',
    ]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('door nemo-gym');
    results = readJsonl<GymRolloutResult>(out).sort((x, y) => x.row - y.row);
    expect(results).toHaveLength(4);
    expect(maxInFlight).toBe(1);
  }, 90_000); // one CLI run of 4 rollouts; a loaded 2-core machine took 23 s

  it('sends each request with exactly the cookies of the previous reply, and no body for arguments "null"', () => {
    const rollout0 = seen.slice(0, seen.findIndex((s) => s.path === '/verify') + 1);
    expect(rollout0.map((s) => [s.path, s.cookie ?? null])).toEqual([
      ['/seed_session', null],
      ['/a', `${SESSION_COOKIE}=A0`],
      // "b" had arguments that do not parse: simple_agent answers the model itself.
      ['/c', 'sess=B'],
      ['/d', null],
      ['/verify', 'sess=C'],
    ]);
    expect(rollout0[1]!.body).toBe('{"q":1}');
    expect(rollout0[2]).toMatchObject({ body: '', contentType: undefined });
    expect(fedBack.slice(0, 2)).toEqual([
      ['boom', expect.stringMatching(/^\{"error": "Invalid tool call arguments: JSONDecodeError\(.+\)"\}$/), 'c-out'],
      ['nope'],
    ]);
  });

  it('seeds with the run request and verifies with the whole episode as response.output', () => {
    const seed = JSON.parse(seen[0]!.body) as Record<string, unknown>;
    expect(seed).toMatchObject({
      responses_create_params: {
        input: [{ type: 'message', role: 'user', content: 'q0' }],
        tools: ['a', 'b', 'c', 'd'].map((name) => ({ type: 'function', name, parameters: { type: 'object', properties: {} }, strict: false })),
        tool_choice: 'auto',
        parallel_tool_calls: true,
        temperature: null,
      },
      reference_answer: '4.2',
      agent_ref: { name: 'rft_agent' },
      _ng_task_index: 0,
      _ng_rollout_index: 0,
    });
    const verify = JSON.parse(seen.find((s) => s.path === '/verify')!.body) as { response: { output: { type: string; name?: string; output?: string }[] } } & Record<string, unknown>;
    const { response, ...run } = verify;
    expect(run).toEqual(seed);
    expect(response.output.map((o) => (o.type === 'function_call' ? `call ${o.name}` : o.type === 'function_call_output' ? `out ${o.output!.slice(0, 12)}` : o.type))).toEqual([
      'call a', 'call b', 'call c', 'out boom', 'out {"error": "I', 'out c-out', 'call d', 'out nope', 'message',
    ]);
  });

  it("takes the reward, keeps a grader failure's class, and discards what simple_agent or NeMo RL would refuse", () => {
    expect(results[0]).toMatchObject({ score: 0.75, discarded: false, tool_calls: 4, steps: 3, failure_class: null, budget_exhausted: false, trace_id: traceIdOf('A0') });
    expect(results[1]).toMatchObject({ score: 0, discarded: false, failure_class: 'judge_failed' });
    expect(results[2]).toMatchObject({ score: null, discarded: true, error_code: 'RFT_ERR_ROLLOUT_DISCARDED' });
    expect(results[2]!.error).toMatch(/reward_components/);
    expect(results[3]).toMatchObject({ score: null, discarded: true, error_code: 'RFT_ERR_ROLLOUT_DISCARDED' });
    expect(results[3]!.error).toMatch(/\/verify answered 500/);
  });
});
