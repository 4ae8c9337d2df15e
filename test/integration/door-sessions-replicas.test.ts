// Door sessions in the record: a NeMo Gym session whose requests each go to another of three replicas
// sharing one Postgres schema (no affinity), and one whose server is killed (-9) and started again
// between two tool calls; each is graded once, with the reward the same answer gets through /grade.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { toGymRow } from '../../src/cli/dataset/nemo-gym-row.js';
import { SESSION_COOKIE } from '../../src/doors/nemo-gym/app.js';
import { traceIdOf } from '../../src/doors/nemo-gym/sessions.js';
import { gradeThroughApi } from '../helpers/agent-rft.js';
import { spawnServer, type ChildServer } from '../helpers/child-server.js';
import { gymRequest, simpleAgentRun, type ModelTurn } from '../helpers/nemo-gym-client.js';
import { describeIf } from '../helpers/require.js';
import { repoRoot, startTestServer, type TestServer } from '../helpers/server.js';
import { databaseUrl, dropSchema, postgresUnavailable, randomSchema } from '../store/postgres-db.js';

type Row = Record<string, unknown>;
const unavailable = await postgresUnavailable();
const schema = randomSchema();
const finqa = readFileSync(join(repoRoot, 'examples/finqa/train.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Row);
const itemOf = ({ messages: _m, tools: _t, ...item }: Row): Row => item;
const question = (row: Row) => JSON.stringify((row.messages as { content: string }[]).at(-1)!.content.slice(0, 80));
/** Two tool calls (the same twice: a model repeating a call at once, which is no retry), then the answer. */
const model = (row: Row, text: string, same = true) => (step: number): ModelTurn =>
  step <= 2 ? { calls: [{ name: 'search_docs', arguments: `{"query": ${same || step === 1 ? question(row) : '"revenue"'}}` }] } : { message: text };

interface Record_ {
  door: string;
  calls: { tool: string; status: string }[];
  grades: { score: number }[];
}
const recordOf = async (url: string, key: string, trace: string): Promise<Record_> =>
  (await (await fetch(`${url}/v1/rollouts/${trace}`, { headers: { authorization: `Bearer ${key}` } })).json()) as Record_;

let replicas: TestServer[] = [];

describeIf(unavailable === undefined, 'Postgres', unavailable ?? '')('door sessions across replicas and restarts', () => {
  beforeAll(async () => {
    replicas = await Promise.all(
      ['a', 'b', 'c'].map((id) =>
        startTestServer({
          env: { RFT_STORE: 'postgres', RFT_DATABASE_URL: databaseUrl, RFT_PG_SCHEMA: schema, RFT_INSTANCE_ID: `sessions-${id}`, RFT_NEMO_GYM_PORT: '0', RFT_RATE_LIMIT: '0' },
        }),
      ),
    );
  }, 120_000);
  afterAll(async () => {
    await Promise.all(replicas.map((r) => r.close()));
    await dropSchema(schema);
  });

  it('serves a NeMo Gym session whose every request goes to the next of three replicas, and grades it once', async () => {
    const doors = replicas.map((r) => r.app.rft.nemoGym!.url);
    for (const [n, text] of [[0, `Answer: ${String(finqa[0]!.reference_answer)}`], [1, 'Answer: 17']] as const) {
      const row = finqa[n]!;
      let turn = 0;
      const ep = await simpleAgentRun(doors[0]!, toGymRow(row), model(row, text), {
        request: (_base, path, json, o) => gymRequest(doors[turn++ % doors.length]!, path, json, o),
      });
      expect(turn).toBe(4);
      expect([ep.seed.status, ...ep.tools.map((t) => t.reply?.status), ep.verify.status]).toEqual([200, 200, 200, 200]);
      const expected = await gradeThroughApi(replicas[0]!, itemOf(row), text);
      expect(ep.result!.reward).toBe(expected);
      const rec = await recordOf(replicas[2]!.url, replicas[2]!.key, traceIdOf(ep.seed.cookies[SESSION_COOKIE]!));
      expect(rec.door).toBe('nemo-gym');
      expect(rec.calls.map((c) => c.status)).toEqual(['ok', 'ok']);
      expect(rec.grades.map((g) => g.score)).toEqual([expected]);
    }
  }, 120_000);

  it('keeps a NeMo Gym session open across a kill -9 and restart of its server between two tool calls', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'rft-sessions-restart-'));
    const key = 'sessions-restart-key-0123456789abcdef';
    const boot = async (): Promise<{ server: ChildServer; door: string }> => {
      const server = await spawnServer({ RFT_DATA_DIR: dataDir, RFT_API_KEYS: `t:${key}`, RFT_NEMO_GYM_PORT: '0', RFT_LOG_LEVEL: 'info', RFT_RATE_LIMIT: '0' }, 120_000);
      let door = '';
      await vi.waitFor(() => {
        door = /"url":"(http[^"]+)","msg":"NeMo Gym door/.exec(server.stdout())?.[1] ?? '';
        expect(door).not.toBe('');
      }, { timeout: 30_000, interval: 50 });
      return { server, door };
    };
    try {
      let current = await boot();
      const row = finqa[2]!;
      const text = `Answer: ${String(row.reference_answer)}`;
      let requests = 0;
      // (two different calls: whether the first one's reply was delivered may not be on disk at the kill)
      const ep = await simpleAgentRun(current.door, toGymRow(row), model(row, text, false), {
        request: async (_base, path, json, o) => {
          // the second tool call goes to the server started again after a kill -9
          if (++requests === 3) {
            await current.server.stop('SIGKILL');
            current = await boot();
          }
          return gymRequest(current.door, path, json, o);
        },
      });
      expect(requests).toBe(4);
      expect([ep.seed.status, ...ep.tools.map((t) => t.reply?.status), ep.verify.status]).toEqual([200, 200, 200, 200]);
      const expected = await gradeThroughApi(replicas[0]!, itemOf(row), text);
      expect(ep.result!.reward).toBe(expected);
      const rec = await recordOf(current.server.url, key, traceIdOf(ep.seed.cookies[SESSION_COOKIE]!));
      expect(rec.calls.map((c) => c.status)).toEqual(['ok', 'ok']);
      expect(rec.grades.map((g) => g.score)).toEqual([expected]);
      await current.server.stop();
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 240_000);
});
