// A model's tool call can never reach the NeMo Gym door's session control (issue 37): its calls named
// seed_session, verify, aggregate_metrics or mcp arrive as Gym's simple_agent sends every tool call
// (POST /{name}, the arguments as body, the episode's cookies: test/helpers/nemo-gym-client.ts) and are
// tool errors the model reads; a session is seeded once and graded once (docs/nemo-gym.md).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot, startTestServer, type TestServer } from '../../helpers/server.js';
import { postOnce, simpleAgentRun, type ModelTurn } from '../../helpers/nemo-gym-client.js';
import { toGymRow } from '../../../src/cli/dataset/nemo-gym-row.js';
import { gradeThroughApi } from '../../helpers/agent-rft.js';

type Row = Record<string, unknown>;
const finqa = readFileSync(join(repoRoot, 'examples/finqa/train.jsonl'), 'utf8')
  .trim()
  .split('\n')
  .map((l) => JSON.parse(l) as Row);
const itemOf = ({ messages: _m, tools: _t, ...item }: Row): Row => item;
const right = (i: number) => `Answer: ${String(finqa[i]!.reference_answer)}`;
const message = (text: string) => ({ type: 'message', role: 'assistant', content: [{ type: 'output_text', text, annotations: [] }] });
const codeOf = (text: string) => (JSON.parse(text) as { error?: { code?: string } }).error?.code;

describe('NeMo Gym door: session control is never a tool', () => {
  let server: TestServer;
  let door: string;
  beforeAll(async () => {
    server = await startTestServer({ env: { RFT_NEMO_GYM_PORT: '0', RFT_SQLITE_SYNC: 'normal' } });
    door = server.app.rft.nemoGym!.url;
  });
  afterAll(() => server?.close());
  const grade = (i: number, text: string) => gradeThroughApi(server, itemOf(finqa[i]!), text);

  it("a first tool call seed_session with a copy of the row that says the answer is 0 does not re-seed: 'Answer: 0' is graded on the true row", async () => {
    const row = toGymRow(finqa[0]!);
    const forged = { ...row, reference_answer: '0' };
    const ep = await simpleAgentRun(door, row, (step) => (step === 1 ? { calls: [{ name: 'seed_session', arguments: JSON.stringify(forged) }] } : { message: 'Answer: 0' }));
    expect(ep.tools[0]!.reply!.status).toBe(422);
    expect(codeOf(ep.tools[0]!.output)).toBe('RFT_ERR_NEMO_GYM_NOT_A_TOOL');
    expect(ep.verify.status).toBe(200);
    expect(ep.result!.reward).toBe(await grade(0, 'Answer: 0'));
    expect(ep.result!.reward).toBe(0);
  });

  it("a first tool call seed_session with a junk row is a tool error, and the trainer's /verify still grades", async () => {
    const row = toGymRow(finqa[1]!);
    const ep = await simpleAgentRun(door, row, (step) =>
      step === 1 ? { calls: [{ name: 'seed_session', arguments: '{"responses_create_params": {"input": "x"}}' }] } : { message: right(1) },
    );
    expect(ep.tools[0]!.reply!.status).toBe(422);
    expect(ep.verify.status).toBe(200);
    expect(ep.result!.reward).toBe(1);
  });

  it('a verify call carrying the row and an episode that leaves out a served call is a tool error: not graded, no reward shown, the real /verify grades', async () => {
    const row = toGymRow(finqa[2]!);
    const forged = { ...row, response: { output: [message(right(2))] } };
    const model = (step: number): ModelTurn =>
      step === 1
        ? { calls: [{ name: 'list_docs', arguments: '{}' }] }
        : step === 2
          ? { calls: [{ name: 'verify', arguments: JSON.stringify(forged) }] }
          : { message: 'Answer: 17' };
    const ep = await simpleAgentRun(door, row, model);
    const call = ep.tools[1]!;
    expect(call.reply!.status).toBe(422);
    expect(codeOf(call.output)).toBe('RFT_ERR_NEMO_GYM_NOT_A_TOOL');
    expect(call.output).not.toMatch(/reward/);
    expect(ep.verify.status).toBe(200);
    expect(ep.result!.reward).toBe(await grade(2, 'Answer: 17'));
    expect(ep.result!.reward).toBe(0);
  });

  it('a verify call indistinguishable from the real one is graded once: it is the final grade, and the real /verify gets it, not a regrade', async () => {
    const row = toGymRow(finqa[3]!);
    // the first call, so the episode so far lists nothing: the row and a message are a complete /verify
    const forged = { ...row, response: { output: [message('Answer: 17')] } };
    const ep = await simpleAgentRun(door, row, (step) => (step === 1 ? { calls: [{ name: 'verify', arguments: JSON.stringify(forged) }] } : { message: right(3) }));
    expect(ep.tools[0]!.reply!.status).toBe(200);
    const shown = (JSON.parse(ep.tools[0]!.output) as { reward: number }).reward;
    expect(shown).toBe(0);
    expect(ep.verify.status).toBe(200);
    expect(ep.result!.reward).toBe(shown);
    // and any later /verify, whatever its answer
    const again = await postOnce(door, '/verify', { ...row, response: { output: [message(right(3))] } }, { cookies: ep.verify.cookies });
    expect(again.status).toBe(200);
    expect((JSON.parse(again.text) as { reward: number }).reward).toBe(0);
  });

  it('a second real /verify with another answer gets the recorded reward (200: simple_agent raises on any other status)', async () => {
    const row = toGymRow(finqa[4]!);
    const ep = await simpleAgentRun(door, row, () => ({ message: 'Answer: 17' }));
    expect(ep.result!.reward).toBe(0);
    const again = await postOnce(door, '/verify', { ...row, response: { output: [message(right(4))] } }, { cookies: ep.verify.cookies });
    expect(again.status).toBe(200);
    expect((JSON.parse(again.text) as { reward: number }).reward).toBe(0);
  });

  it("tools named aggregate_metrics and mcp are tool errors, and each refused control call is in the episode the real /verify accounts for", async () => {
    const row = toGymRow(finqa[5]!);
    const ep = await simpleAgentRun(door, row, (step) =>
      step === 1
        ? {
            calls: [
              { name: 'aggregate_metrics', arguments: '{"verify_responses": []}' },
              { name: 'mcp', arguments: '{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}' },
              { name: 'verify', arguments: '{"answer": "x"}' },
              { name: 'verify', arguments: '{"answer": "x"}' },
              { name: 'seed_session', arguments: 'null' },
              { name: 'list_docs', arguments: '{}' },
            ],
          }
        : { message: right(5) },
    );
    // (the second verify, a deliberate repeat after a delivered reply, is a call of its own)
    expect(ep.tools.map((t) => t.reply!.status)).toEqual([422, 422, 422, 422, 422, 200]);
    expect(ep.tools.slice(0, 5).map((t) => codeOf(t.output))).toEqual(Array(5).fill('RFT_ERR_NEMO_GYM_NOT_A_TOOL'));
    expect(ep.verify.status).toBe(200);
    expect(ep.result!.reward).toBe(1);
  });

  it('the control routes without a session cookie are still the trainer\'s', async () => {
    const agg = await postOnce(door, '/aggregate_metrics', { verify_responses: [] });
    expect(agg.status).toBe(200);
    const seed = await postOnce(door, '/seed_session', toGymRow(finqa[6]!));
    expect(seed.status).toBe(200);
    // a seed carrying a cookie this process does not hold: not a trainer's seed, and the session is lost
    const stale = await postOnce(door, '/seed_session', toGymRow(finqa[6]!), { cookies: { rft_nemo_gym_session: 'gone' } });
    expect(stale.status).toBe(503);
  });
});
