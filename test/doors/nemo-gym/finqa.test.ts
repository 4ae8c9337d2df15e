// The NeMo Gym door with finqa (no sandbox), driven as Gym's simple_agent and verifiers' toolset
// drive a resources server (test/helpers/nemo-gym-client.ts cites their code).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot, startTestServer, type TestServer } from '../../helpers/server.js';
import { gymRequest, postOnce, simpleAgentRun, VerifiersRollout, type ModelTurn } from '../../helpers/nemo-gym-client.js';
import { toGymRow } from '../../../src/cli/dataset/nemo-gym-row.js';
import { SESSION_COOKIE } from '../../../src/doors/nemo-gym/app.js';
import { traceIdOf } from '../../../src/doors/nemo-gym/sessions.js';
import { loadConfig } from '../../../src/config.js';
import { gradeThroughApi } from '../../helpers/agent-rft.js';

type Row = Record<string, unknown>;
const readRows = (file: string): Row[] =>
  readFileSync(join(repoRoot, file), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Row);
const finqa = [...readRows('examples/finqa/train.jsonl'), ...readRows('examples/finqa/valid.jsonl')];
/** What Agent RFT sends as `item`: the row without the prompt and tool schemas. */
const itemOf = ({ messages: _m, tools: _t, ...item }: Row): Row => item;

function expectRewardSum(result: Record<string, unknown> | undefined): void {
  const components = Object.values(result?.reward_components as Record<string, number>);
  expect(components.length).toBeGreaterThan(0);
  expect(components.reduce((s, v) => s + v, 0)).toBe(result?.reward);
}

describe('NeMo Gym door with finqa', () => {
  let server: TestServer;
  let door: string;
  beforeAll(async () => {
    server = await startTestServer({ env: { RFT_NEMO_GYM_PORT: '0', RFT_SQLITE_SYNC: 'normal' } });
    door = server.app.rft.nemoGym!.url;
  });
  afterAll(() => server?.close());

  const grade = (item: Row, text: string): Promise<number> => gradeThroughApi(server, item, text);
  const record = async (traceId: string) => {
    const res = await fetch(`${server.url}/v1/rollouts/${traceId}`, { headers: { authorization: `Bearer ${server.key}` } });
    return (await res.json()) as { door: string; run: string | null; item: Row; calls: { tool: string; status: string; output: string }[] };
  };
  const traceOf = (cookies: Record<string, string>) => traceIdOf(cookies[SESSION_COOKIE]!);

  it('50 rollouts through simple_agent get the rewards the same answers get through /grade', async () => {
    const answers = Array.from({ length: 50 }, (_, i) => {
      const row = finqa[i % finqa.length]!;
      // right, wrong and unparseable answers, so rewards differ
      const text = i % 3 === 0 ? `Answer: ${String(row.reference_answer)}` : i % 3 === 1 ? 'Answer: 17' : 'I do not know.';
      return { row, text };
    });
    const results: { reward: number; expected: number; trace: string }[] = [];
    for (let batch = 0; batch < answers.length; batch += 10) {
      await Promise.all(
        answers.slice(batch, batch + 10).map(async ({ row, text }) => {
          const question = JSON.stringify((row.messages as { content: string }[]).at(-1)!.content.slice(0, 80));
          const model = (step: number): ModelTurn =>
            step === 1 ? { calls: [{ name: 'search_docs', arguments: `{"query": ${question}}` }] } : { message: text };
          const ep = await simpleAgentRun(door, toGymRow(row), model, { modelCookies: { policy_model___openai_model: 'x' } });
          expect(ep.seed.status).toBe(200);
          expect(ep.tools[0]!.reply!.status).toBe(200);
          expect(ep.verify.status).toBe(200);
          expectRewardSum(ep.result);
          // the body is echoed (verifiers fails without it)
          expect(ep.result!.reference_answer).toBe(row.reference_answer);
          results.push({ reward: ep.result!.reward as number, expected: await grade(itemOf(row), text), trace: traceOf(ep.seed.cookies) });
        }),
      );
    }
    expect(results).toHaveLength(50);
    for (const r of results) expect(r.reward).toBe(r.expected);
    expect(new Set(results.map((r) => r.reward)).size).toBeGreaterThan(1);
    const rec = await record(results[0]!.trace);
    expect(rec.door).toBe('nemo-gym');
    expect(rec.calls.map((c) => c.tool)).toEqual(['search_docs']);
  }, 180_000);

  it('the record lists the door and filters by it', async () => {
    const ep = await simpleAgentRun(door, toGymRow(finqa[0]!), () => ({ message: 'Answer: 1' }));
    const trace = traceOf(ep.seed.cookies);
    const list = async (q: string) => {
      const res = await fetch(`${server.url}/v1/rollouts?limit=500${q}`, { headers: { authorization: `Bearer ${server.key}` } });
      return ((await res.json()) as { rollouts: { trace_id: string; door: string }[] }).rollouts;
    };
    expect((await list('&door=nemo-gym')).map((r) => r.trace_id)).toContain(trace);
    expect((await list('&door=agent-rft')).map((r) => r.trace_id)).not.toContain(trace);
    expect((await list('')).find((r) => r.trace_id === trace)?.door).toBe('nemo-gym');
  });

  it('a model calling verify or seed_session as a tool gets a tool error, and the rollout goes on', async () => {
    const row = toGymRow(finqa[1]!);
    const ep = await simpleAgentRun(door, row, (step) =>
      step === 1
        ? { calls: [{ name: 'verify', arguments: '{"answer": "42"}' }, { name: 'seed_session', arguments: '{}' }, { name: 'list_docs', arguments: '{}' }] }
        : step === 2
          ? // a forged /verify body with the row's fields but another episode
            { calls: [{ name: 'verify', arguments: JSON.stringify({ responses_create_params: { input: 'x' }, response: { output: [] } }) }] }
          : { message: `Answer: ${String(finqa[1]!.reference_answer)}` },
    );
    const [verify, seed, list, forged] = ep.tools;
    expect(verify!.reply!.status).toBe(422);
    expect(JSON.parse(verify!.output).error.code).toBe('RFT_ERR_NEMO_GYM_NOT_A_TOOL');
    expect(seed!.reply!.status).toBe(422);
    expect(JSON.parse(seed!.output).error.code).toBe('RFT_ERR_NEMO_GYM_NOT_A_TOOL');
    expect(list!.reply!.status).toBe(200);
    expect(forged!.reply!.status).toBe(422);
    // the seed_session call did not start another rollout: the same session reaches /verify
    expect(ep.verify.status).toBe(200);
    expect(ep.result!.reward).toBe(await grade(itemOf(finqa[1]!), `Answer: ${String(finqa[1]!.reference_answer)}`));
    const rec = await record(traceOf(ep.seed.cookies));
    expect(rec.calls.map((c) => c.tool)).toEqual(['list_docs']);
  });

  it('unknown tools are 404 and bad arguments 422, both read by the model, with the cookie set', async () => {
    const ep = await simpleAgentRun(door, toGymRow(finqa[2]!), (step) =>
      step === 1
        ? { calls: [{ name: 'shell', arguments: '{"command": "id"}' }, { name: 'search_docs', arguments: '{"top_k": "many"}' }, { name: 'list_docs', arguments: '{}' }] }
        : { message: 'Answer: 0' },
    );
    const [shell, bad, ok] = ep.tools;
    expect(shell!.reply!.status).toBe(404);
    expect(JSON.parse(shell!.output).error.code).toBe('RFT_ERR_UNKNOWN_TOOL');
    // errors carry the session cookie too (simple_agent would otherwise call on without one)
    expect(shell!.reply!.cookies[SESSION_COOKIE]).toBe(ep.seed.cookies[SESSION_COOKIE]);
    expect(bad!.reply!.status).toBe(422);
    expect(bad!.output).toMatch(/query|top_k/);
    expect(ok!.reply!.status).toBe(200);
    expect(ep.verify.status).toBe(200);
    expectRewardSum(ep.result);
  });

  it('a rollout on a spent budget reads the budget message as a 200', async () => {
    const row = { ...toGymRow(finqa[3]!), tool_budget: 1 };
    const ep = await simpleAgentRun(door, row, (step) => (step <= 2 ? { calls: [{ name: 'list_docs', arguments: '{}' }] } : { message: 'Answer: 0' }));
    expect(ep.tools[1]!.reply!.status).toBe(200);
    expect(ep.tools[1]!.output).toMatch(/^Tool budget exhausted/);
    expect((await record(traceOf(ep.seed.cookies))).calls.map((c) => c.status)).toEqual(['ok', 'budget_exceeded']);
  });

  it('a transport retry of a call whose reply never arrived is answered from the ledger, not run again', async () => {
    const row = toGymRow(finqa[4]!);
    const seed = await postOnce(door, '/seed_session', row);
    const cookies = seed.cookies;
    // The connection is cut once the request is sent, before its reply: the client retries the same bytes.
    let cuts = 0;
    const retry = await gymRequest(door, '/list_docs', {}, { cookies, onSent: (req) => (cuts++, req.destroy()) });
    expect(cuts).toBe(1);
    const trace = traceIdOf(cookies[SESSION_COOKIE]!);
    expect(retry.status).toBe(200);
    // a deliberate repeat after a delivered reply runs again
    const again = await postOnce(door, '/list_docs', {}, { cookies });
    expect(again.text).toBe(retry.text);
    const rec = await record(trace);
    expect(rec.calls).toHaveLength(2);
  });

  it('the verifiers client works: the seed cookie for the whole rollout, non-2xx marked as errors', async () => {
    const row = toGymRow(finqa[5]!);
    const v = new VerifiersRollout(door, row);
    expect((await v.seed()).status).toBe(200);
    const ok = await v.callTool('list_docs', {});
    expect(ok.isError).toBe(false);
    const missing = await v.callTool('read_file', { path: 'x' });
    expect(missing.isError).toBe(true);
    const text = `Answer: ${String(finqa[5]!.reference_answer)}`;
    // verifiers' _trace_to_nemo_response lists the model's calls as function_call items (/verify checks the served ones are there)
    const calls = [
      { type: 'function_call', call_id: 'c1', name: 'list_docs', arguments: '{}' },
      { type: 'function_call_output', call_id: 'c1', output: ok.text },
      { type: 'function_call', call_id: 'c2', name: 'read_file', arguments: '{"path": "x"}' },
      { type: 'function_call_output', call_id: 'c2', output: missing.text },
    ];
    const out = [...calls, { type: 'message', role: 'assistant', content: [{ type: 'output_text', text }] }];
    const verify = await v.verify({ id: 'r', output: out });
    expect(verify.status).toBe(200);
    const body = JSON.parse(verify.text) as Record<string, unknown>;
    expect(body.reward).toBe(await grade(itemOf(finqa[5]!), text));
    expectRewardSum(body);
  });

  it("labels a session's rollout with its run: the x-rft-run header, else the row's responses_create_params.metadata.rft_run", async () => {
    const row = toGymRow(finqa[7]!) as Row & { responses_create_params: Row };
    const labelled = { ...row, responses_create_params: { ...row.responses_create_params, metadata: { rft_run: 'gym-baseline' } } };
    const fromMetadata = await postOnce(door, '/seed_session', labelled);
    expect(fromMetadata.status).toBe(200);
    expect((await record(traceOf(fromMetadata.cookies))).run).toBe('gym-baseline');
    const seed = (headers: Record<string, string>, body: unknown) =>
      fetch(`${door}/seed_session`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
    const fromHeader = await seed({ 'x-rft-run': 'gym-job' }, labelled);
    expect(fromHeader.status).toBe(200);
    const cookie = new RegExp(`${SESSION_COOKIE}=([^;]+)`).exec(fromHeader.headers.get('set-cookie') ?? '')?.[1];
    expect((await record(traceIdOf(cookie!))).run).toBe('gym-job');
    expect((await record(traceOf((await postOnce(door, '/seed_session', row)).cookies))).run).toBeNull();
    // a label that is not one: a coded 400, from either place
    const badMetadata = { ...row, responses_create_params: { ...row.responses_create_params, metadata: { rft_run: 'a'.repeat(65) } } };
    for (const res of [await seed({}, badMetadata), await seed({ 'x-rft-run': 'b'.repeat(65) }, row)]) {
      expect(res.status).toBe(400);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('RFT_ERR_BAD_RUN_LABEL');
    }
  });

  it('the /ng-rollout/{id}/ prefix is stripped and its id recorded; the other routes answer as Gym expects', async () => {
    const row = toGymRow(finqa[6]!);
    const seed = await postOnce(door, '/ng-rollout/6-2/seed_session', row);
    expect(seed.status).toBe(200);
    const call = await postOnce(door, '/ng-rollout/6-2/list_docs', {}, { cookies: seed.cookies });
    expect(call.status).toBe(200);
    expect((await record(traceIdOf(seed.cookies[SESSION_COOKIE]!))).item._ng_rollout_id).toBe('6-2');
    const agg = await postOnce(door, '/aggregate_metrics', { verify_responses: [] });
    expect(JSON.parse(agg.text)).toEqual({ group_level_metrics: [], agent_metrics: {}, key_metrics: {} });
    expect(await (await fetch(`${door}/reverify_mode`)).json()).toBe('unsupported');
    // a tool call without a session
    const none = await postOnce(door, '/list_docs', {});
    expect(JSON.parse(none.text).error.code).toBe('RFT_ERR_NEMO_GYM_SESSION');
    expect(none.status).toBe(400);
    // a cookie no live session has (a restart or the TTL ended it): ours, so a 5xx the trainer reruns
    const gone = await postOnce(door, '/list_docs', {}, { cookies: { [SESSION_COOKIE]: 'not-a-live-session' } });
    expect(gone.status).toBe(503);
    expect(JSON.parse(gone.text).error.code).toBe('RFT_ERR_NEMO_GYM_SESSION_LOST');
  });

  it('a /verify sent again gets the same reward; a body over the limit is a coded 413 that still sets the cookie', async () => {
    const row = toGymRow(finqa[7]!);
    const text = `Answer: ${String(finqa[7]!.reference_answer)}`;
    const ep = await simpleAgentRun(door, row, () => ({ message: text }));
    const response = { id: 'resp_1', output: [{ type: 'message', role: 'assistant', content: [{ type: 'output_text', text }] }] };
    const again = await postOnce(door, '/verify', { ...row, response }, { cookies: ep.verify.cookies });
    expect(again.status).toBe(200);
    expect(JSON.parse(again.text).reward).toBe(ep.result!.reward);
    const big = await postOnce(door, '/list_docs', { q: 'x'.repeat(server.app.rft.config.bodyLimitBytes) }, { cookies: ep.seed.cookies });
    expect(big.status).toBe(413);
    expect(JSON.parse(big.text).error.code).toBe('RFT_ERR_BODY_TOO_LARGE');
    expect(big.cookies[SESSION_COOKIE]).toBe(ep.seed.cookies[SESSION_COOKIE]);
  });

  it('a row whose tools are not one environment\'s is refused at /seed_session', async () => {
    const coding = readRows('examples/coding/train.jsonl')[0]!;
    const mixed = toGymRow({ ...finqa[0]!, tools: [...(finqa[0]!.tools as unknown[]), ...(coding.tools as unknown[])] });
    const seed = await postOnce(door, '/seed_session', mixed);
    expect(seed.status).toBe(400);
  });
});

describe('NeMo Gym door listener', () => {
  it('refuses a non-loopback host unless RFT_NEMO_GYM_ALLOW_REMOTE=1', () => {
    const base = { RFT_NEMO_GYM_PORT: '19600', RFT_NEMO_GYM_HOST: '0.0.0.0' };
    expect(() => loadConfig(base)).toThrow(expect.objectContaining({ code: 'RFT_ERR_NEMO_GYM_REMOTE' }));
    expect(loadConfig({ ...base, RFT_NEMO_GYM_ALLOW_REMOTE: '1' }).nemoGym.host).toBe('0.0.0.0');
    expect(loadConfig({ RFT_NEMO_GYM_PORT: '19600' }).nemoGym.host).toBe('127.0.0.1');
  });
});
