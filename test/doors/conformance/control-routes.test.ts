// Doors x control-route names (issue 37): a model's tool call named like a control route of its door
// (the door's session, seed, grade or transport routes) is a tool error the model reads, never control:
// no grade, no reward, no new or ended session, and the episode's reward is still its final answer's.
// Each door is driven by the replay of its trainer's client (test/helpers/*-client.ts).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot, startTestServer, type TestServer } from '../../helpers/server.js';
import { simpleAgentRun, type ModelTurn } from '../../helpers/nemo-gym-client.js';
import { OrsClient, TrlRollout } from '../../helpers/ors-client.js';
import { EnvClient } from '../../helpers/openenv-client.js';
import { toGymRow } from '../../../src/cli/dataset/nemo-gym-row.js';
import { CONTROL_ROUTES, MCP_TOKEN_HEADER } from '../../../src/doors/nemo-gym/app.js';

type Row = Record<string, unknown>;
const train = readFileSync(join(repoRoot, 'examples/finqa/train.jsonl'), 'utf8')
  .trim()
  .split('\n')
  .map((l) => JSON.parse(l) as Row);
const right = (i: number) => `Answer: ${String(train[i]!.reference_answer)}`;
const message = (text: string) => ({ type: 'message', role: 'assistant', content: [{ type: 'output_text', text, annotations: [] }] });

/** The worst arguments a model can give a call of that name: what the control route itself would take. */
function gymArguments(name: string, row: Row): unknown {
  switch (name) {
    case 'seed_session':
      return { ...row, reference_answer: '17' };
    case 'verify':
      return { ...row, response: { output: [message(right(0))] } };
    case 'aggregate_metrics':
      return { verify_responses: [] };
    default:
      return { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'list_docs', arguments: {} } };
  }
}

const table: { door: string; names: string[] }[] = [
  { door: 'nemo-gym', names: [...CONTROL_ROUTES] },
  { door: 'nemo-gym /mcp', names: ['seed_session', 'verify', 'aggregate_metrics'] },
  { door: 'ors', names: ['create_session', 'create', 'ping', 'delete', 'delete_session', 'call', 'task_tools'] },
  { door: 'openenv', names: ['reset', 'step', 'state', 'close', 'list_tools', 'mcp'] },
];

describe('control-route names are tool errors at every door', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ env: { RFT_NEMO_GYM_PORT: '0', RFT_PRIVATE_PORT: '0', RFT_SQLITE_SYNC: 'normal' } });
  });
  afterAll(() => server?.close());

  for (const { door, names } of table) {
    for (const name of names) {
      it(`${door}: a tool named ${name}`, async () => {
        if (door === 'nemo-gym') {
          const row = toGymRow(train[0]!);
          // verify after a served call (an episode that omits it is not Gym's); seed_session as the very first call
          const before: ModelTurn[] = name === 'verify' ? [{ calls: [{ name: 'list_docs', arguments: '{}' }] }] : [];
          const turns: ModelTurn[] = [...before, { calls: [{ name, arguments: JSON.stringify(gymArguments(name, row)) }] }, { message: 'Answer: 17' }];
          const ep = await simpleAgentRun(server.app.rft.nemoGym!.url, row, (step) => turns[step - 1]!);
          const call = ep.tools.at(-1)!;
          expect(call.reply!.status).toBe(422);
          expect((JSON.parse(call.output) as { error: { code: string } }).error.code).toBe('RFT_ERR_NEMO_GYM_NOT_A_TOOL');
          expect(call.output).not.toMatch(/"reward"/);
          expect(ep.verify.status).toBe(200);
          expect(ep.result!.reward).toBe(0);
        } else if (door === 'nemo-gym /mcp') {
          const base = server.app.rft.nemoGym!.url;
          const seed = await fetch(`${base}/seed_session`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(toGymRow(train[1]!)) });
          const token = ((await seed.json()) as { mcp: { headers: Record<string, string> } }).mcp.headers[MCP_TOKEN_HEADER]!;
          const res = await fetch(`${base}/mcp`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-06-18', [MCP_TOKEN_HEADER]: token },
            body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: { ...toGymRow(train[1]!), response: { output: [message(right(1))] } } } }),
          });
          const text = await res.text();
          expect(text).toMatch(/RFT_ERR_UNKNOWN_TOOL|not one of this rollout's tools/);
          expect(text).not.toMatch(/"reward"/);
          const cookie = seed.headers.get('set-cookie')!.split(';')[0]!;
          const verify = await fetch(`${base}/verify`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', cookie },
            body: JSON.stringify({ ...toGymRow(train[1]!), response: { output: [message('Answer: 17')] } }),
          });
          expect(verify.status).toBe(200);
          expect(((await verify.json()) as { reward: number }).reward).toBe(0);
        } else if (door === 'ors') {
          const ors = new OrsClient(server.url, { token: server.key });
          await ors.session('finqa', { split: 'train', index: 2 }, async (s) => {
            const trl = new TrlRollout(s);
            const out = await trl.call(name, {});
            expect(out).toMatch(/^Error: /);
            expect(trl.rewards).toEqual([null]);
            expect(trl.finished).toBe(false);
            await trl.call('submit', { answer: right(2) });
            expect(trl.finished).toBe(true);
            expect(trl.reward).toBe(1);
          });
        } else {
          const env = await new EnvClient(`${server.app.rft.privateDoors!.url}/finqa`).connect();
          try {
            await env.reset({ split: 'train', index: 3 });
            const r = await env.step({ type: 'call_tool', tool_name: name, arguments: { split: 'train', index: 0 } });
            expect(r.observation.error).toMatchObject({ error_type: 'tool_not_found' });
            expect(r.reward).toBeNull();
            expect(r.done).toBe(false);
            const submitted = await env.step({ type: 'call_tool', tool_name: 'submit', arguments: { answer: right(3) } });
            expect(submitted.done).toBe(true);
            expect(submitted.reward).toBe(1);
            expect(await env.state()).toMatchObject({ split: 'train', index: 3 });
          } finally {
            await env.close();
          }
        }
      });
    }
  }
});
