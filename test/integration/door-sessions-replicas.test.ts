// Door sessions in the record: NeMo Gym, ORS and OpenEnv (HTTP /mcp) sessions whose requests each go to
// another of three replicas sharing one Postgres schema (no affinity), and ones whose server is killed (-9)
// and started again between two tool calls; each is graded once, with the reward the same answer gets
// through /grade.
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
import { OrsClient, OrsSession } from '../helpers/ors-client.js';
import { describeIf } from '../helpers/require.js';
import { repoRoot, startTestServer, type TestServer } from '../helpers/server.js';
import { databaseUrl, dropSchema, postgresUnavailable, randomSchema } from '../store/postgres-db.js';
import { EXTRA_ENGINE_HOSTS, extraEnginesMissing } from '../helpers/extra-engines.js';
import { mcpPost } from '../helpers/openenv-mcp.js';

type Row = Record<string, unknown>;
const unavailable = await postgresUnavailable();
const noEngines = unavailable ?? (await extraEnginesMissing());
const coding = readFileSync(join(repoRoot, 'examples/coding/train.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Row);
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

/** An ORS episode on finqa's train row `index`: each request through `at(n)`, the n-th client; the submit's reward and the sid. */
async function orsEpisode(at: (n: number) => Promise<OrsClient>, index: number, answer: string): Promise<{ sid: string; reward: number | null }> {
  let n = 0;
  const next = () => at(n++);
  const res = (await (await next()).sse('/create_session', {}, { maxRetries: 3 })) as { sid: string };
  await (await next()).request('POST', '/create', { split: 'train', index }, res.sid);
  const step = async <T>(f: (s: OrsSession) => Promise<T>): Promise<T> => {
    const session = new OrsSession(await next(), 'finqa', res.sid);
    try {
      return await f(session);
    } finally {
      session.stopPings();
    }
  };
  expect((await step((s) => s.getPrompt())).map((b) => b.text).join('\n')).toContain(question(finqa[index]!).slice(1, 40));
  expect((await step((s) => s.callTool('search_docs', { query: question(finqa[index]!) }))).finished).toBe(false);
  expect((await step((s) => s.callTool('search_docs', { query: '"revenue"' }))).finished).toBe(false);
  const submitted = await step((s) => s.callTool('submit', { answer }));
  expect(submitted.finished).toBe(true);
  return { sid: res.sid, reward: submitted.reward };
}

/**
 * An OpenEnv HTTP /mcp session on finqa's train row `index`, each request to `at(n)`'s /finqa/mcp, the
 * n-th request's: created, listed, two calls (the first sent again: its retry), a submit (sent again):
 * the session id and the reward.
 */
async function openEnvSession(at: (n: number) => Promise<string>, index: number, answer: string): Promise<{ sid: string; reward: unknown }> {
  let n = 0;
  const rpc = async (method: string, params: Record<string, unknown>, id: number) => {
    const r = await mcpPost(`${await at(n++)}/finqa/mcp`, method, params, id);
    expect(r.error).toBeUndefined();
    expect(r.status).toBe(200);
    return r.result!;
  };
  const sid = (await rpc('openenv/session/create', { split: 'train', index }, 1)).session_id as string;
  expect(((await rpc('tools/list', { session_id: sid }, 2)).tools as { name: string }[]).map((t) => t.name)).toContain('search_docs');
  const first = await rpc('tools/call', { name: 'search_docs', arguments: { query: JSON.parse(question(finqa[index]!)) as string }, session_id: sid }, 3);
  expect(first).toMatchObject({ is_error: false });
  expect(await rpc('tools/call', { name: 'search_docs', arguments: { query: JSON.parse(question(finqa[index]!)) as string }, session_id: sid }, 3)).toEqual(first);
  expect(await rpc('tools/call', { name: 'search_docs', arguments: { query: 'revenue' }, session_id: sid }, 4)).toMatchObject({ is_error: false });
  const submitted = await rpc('tools/call', { name: 'submit', arguments: { answer }, session_id: sid }, 5);
  expect(await rpc('tools/call', { name: 'submit', arguments: { answer }, session_id: sid }, 5)).toEqual(submitted);
  return { sid, reward: (submitted.structured_content as { reward: unknown; done: boolean }).reward };
}

describeIf(unavailable === undefined, 'Postgres', unavailable ?? '')('door sessions across replicas and restarts', () => {
  beforeAll(async () => {
    replicas = await Promise.all(
      ['a', 'b', 'c'].map((id) =>
        startTestServer({
          env: {
            RFT_STORE: 'postgres', RFT_DATABASE_URL: databaseUrl, RFT_PG_SCHEMA: schema, RFT_INSTANCE_ID: `sessions-${id}-${schema}`, RFT_NEMO_GYM_PORT: '0', RFT_PRIVATE_PORT: '0', RFT_RATE_LIMIT: '0',
            // sandboxes on the shared engines, when there are some (the coding case)
            ...(noEngines === undefined ? { RFT_SANDBOX: 'docker', RFT_DOCKER_HOSTS: EXTRA_ENGINE_HOSTS, RFT_SANDBOX_GRACE_MS: '1000' } : {}),
          },
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

  it.runIf(noEngines === undefined)('serves a NeMo Gym coding session from three replicas in one workspace, and grades it once', async () => {
    const doors = replicas.map((r) => r.app.rft.nemoGym!.url);
    const row = coding[0]!;
    const patch = readFileSync(join(repoRoot, 'examples/coding/tasks', String(row.task_id), 'solution.patch'), 'utf8');
    const seed = await gymRequest(doors[0]!, '/seed_session', toGymRow(row));
    expect(seed.status).toBe(200);
    // (each call listed in the episode /verify sends, as Gym's agent lists a call before sending it)
    const output: Row[] = [];
    const at = (n: number, path: string, body: unknown) => {
      if (path !== '/verify') output.push({ type: 'function_call', call_id: `call_${output.length}`, name: path.slice(1), arguments: JSON.stringify(body), status: 'completed' });
      return gymRequest(doors[n]!, path, body, { cookies: seed.cookies });
    };
    expect((await at(1, '/shell', { command: 'echo from-b > note.txt' })).status).toBe(200);
    expect((await at(2, '/read_file', { path: 'note.txt' })).text).toContain('from-b');
    expect((await at(0, '/apply_patch', { patch })).text).not.toMatch(/^Error/);
    const response = { id: 'resp_1', created_at: 0, model: 'policy', object: 'response', output, parallel_tool_calls: false, tool_choice: 'auto', tools: [] };
    const verify = await at(1, '/verify', { ...toGymRow(row), response });
    expect(verify.status).toBe(200);
    const reward = (JSON.parse(verify.text) as { reward: number }).reward;
    expect(reward).toBeGreaterThan(0.9);
    const rec = await recordOf(replicas[2]!.url, replicas[2]!.key, traceIdOf(seed.cookies[SESSION_COOKIE]!));
    expect(rec.calls.map((c) => c.status)).toEqual(['ok', 'ok', 'ok']);
    expect(rec.grades.map((g) => g.score)).toEqual([reward]);
  }, 300_000);

  it("refuses a NeMo Gym model's verify call on one replica by the calls another served, and grades the trainer's /verify once", async () => {
    const doors = replicas.map((r) => r.app.rft.nemoGym!.url);
    const row = toGymRow(finqa[6]!);
    const right = `Answer: ${String(finqa[6]!.reference_answer)}`;
    // The model's call named verify carries the row and a right answer but leaves out the call B served:
    // A knows of that call only from the record.
    const forged = { ...row, response: { output: [{ type: 'message', role: 'assistant', content: [{ type: 'output_text', text: right, annotations: [] }] }] } };
    const model = (step: number): ModelTurn =>
      step === 1 ? { calls: [{ name: 'list_docs', arguments: '{}' }] } : step === 2 ? { calls: [{ name: 'verify', arguments: JSON.stringify(forged) }] } : { message: 'Answer: 17' };
    const route = [0, 1, 0, 1]; // seed on A, list_docs on B, the model's verify on A, the trainer's /verify on B
    let turn = 0;
    let verifyBody: unknown;
    const ep = await simpleAgentRun(doors[0]!, row, model, {
      request: (_base, path, json, o) => {
        if (path === '/verify') verifyBody = json;
        return gymRequest(doors[route[turn++]!]!, path, json, o);
      },
    });
    expect(turn).toBe(4);
    expect(ep.tools.map((t) => t.reply?.status)).toEqual([200, 422]);
    expect((JSON.parse(ep.tools[1]!.output) as { error: { code: string } }).error.code).toBe('RFT_ERR_NEMO_GYM_NOT_A_TOOL');
    expect(ep.tools[1]!.output).not.toMatch(/reward/);
    expect(ep.verify.status).toBe(200);
    const expected = await gradeThroughApi(replicas[0]!, itemOf(finqa[6]!), 'Answer: 17');
    expect(expected).toBe(0);
    expect(ep.result!.reward).toBe(expected);
    // Graded once: the trainer's retry of /verify on C gets the recorded reward, and the record holds one grade.
    const again = await gymRequest(doors[2]!, '/verify', verifyBody, { cookies: ep.seed.cookies });
    expect(again.status).toBe(200);
    expect((JSON.parse(again.text) as { reward: number }).reward).toBe(expected);
    const rec = await recordOf(replicas[2]!.url, replicas[2]!.key, traceIdOf(ep.seed.cookies[SESSION_COOKIE]!));
    expect(rec.calls.map((c) => c.tool)).toEqual(['list_docs']);
    expect(rec.grades.map((g) => g.score)).toEqual([expected]);
  }, 120_000);

  it('keys concurrent different calls of one NeMo Gym session on three replicas once each, none taken for another', async () => {
    const doors = replicas.map((r) => r.app.rft.nemoGym!.url);
    const seed = await gymRequest(doors[0]!, '/seed_session', toGymRow(finqa[1]!));
    const replies = await Promise.all(
      Array.from({ length: 9 }, (_, i) => gymRequest(doors[i % 3]!, '/search_docs', { query: `query ${i}` }, { cookies: seed.cookies })),
    );
    expect(replies.map((r) => r.status)).toEqual(Array(9).fill(200));
    const rec = (await (await fetch(`${replicas[0]!.url}/v1/rollouts/${traceIdOf(seed.cookies[SESSION_COOKIE]!)}`, { headers: { authorization: `Bearer ${replicas[0]!.key}` } })).json()) as {
      calls: { call_id: string; arguments: string }[];
    };
    expect(rec.calls.map((c) => c.call_id).sort()).toEqual(Array.from({ length: 9 }, (_, i) => `ng-${i + 1}`).sort());
    expect(new Set(rec.calls.map((c) => c.arguments)).size).toBe(9);
  }, 120_000);

  it('serves an ORS session whose every request goes to the next of three replicas, and grades it once', async () => {
    const clients = replicas.map((r) => new OrsClient(r.url, { token: r.key }));
    for (const [index, answer] of [[3, `Answer: ${String(finqa[3]!.reference_answer)}`], [4, 'Answer: 17']] as const) {
      const { sid, reward } = await orsEpisode(async (n) => clients[n % clients.length]!, index, answer);
      const expected = await gradeThroughApi(replicas[0]!, itemOf(finqa[index]!), answer);
      expect(reward).toBe(expected);
      const rec = await recordOf(replicas[1]!.url, replicas[1]!.key, sid);
      expect(rec.door).toBe('ors');
      expect(rec.calls.map((c) => c.status)).toEqual(['ok', 'ok']);
      expect(rec.grades.map((g) => g.score)).toEqual([expected]);
    }
  }, 120_000);

  it('serves an OpenEnv /mcp session whose every request goes to the next of three replicas, and grades it once', async () => {
    const doors = replicas.map((r) => r.app.rft.privateDoors!.url);
    for (const [index, answer] of [[7, `Answer: ${String(finqa[7]!.reference_answer)}`], [8, 'Answer: 17']] as const) {
      // create on A, the listing on B, the call on C and its retry on A, the next call on B, the submit on C and its retry on A
      const { sid, reward } = await openEnvSession(async (n) => doors[n % doors.length]!, index, answer);
      const expected = await gradeThroughApi(replicas[0]!, itemOf(finqa[index]!), answer);
      expect(reward).toBe(expected);
      const rec = await recordOf(replicas[1]!.url, replicas[1]!.key, sid);
      expect(rec.door).toBe('openenv');
      expect(rec.calls.map((c) => c.status)).toEqual(['ok', 'ok']);
      expect(rec.grades.map((g) => g.score)).toEqual([expected]);
    }
  }, 120_000);

  it.runIf(noEngines === undefined)('serves an OpenEnv /mcp coding session from three replicas in one workspace, and grades it once', async () => {
    const doors = replicas.map((r) => `${r.app.rft.privateDoors!.url}/coding/mcp`);
    const row = coding[0]!;
    const patch = readFileSync(join(repoRoot, 'examples/coding/tasks', String(row.task_id), 'solution.patch'), 'utf8');
    const rpc = async (n: number, method: string, params: Record<string, unknown>, id: number) => {
      const r = await mcpPost(doors[n]!, method, params, id);
      expect(r.error, JSON.stringify(r)).toBeUndefined();
      return r.result!;
    };
    const sid = (await rpc(0, 'openenv/session/create', { split: 'train', index: 0 }, 1)).session_id as string;
    const call = (n: number, name: string, args: Record<string, unknown>, id: number) => rpc(n, 'tools/call', { name, arguments: args, session_id: sid }, id);
    expect(await call(1, 'shell', { command: 'echo from-b > note.txt' }, 2)).toMatchObject({ is_error: false });
    expect(String((await call(2, 'read_file', { path: 'note.txt' }, 3)).data)).toContain('from-b');
    expect(String((await call(0, 'apply_patch', { patch }, 4)).data)).not.toMatch(/^Error/);
    const submitted = await call(1, 'submit', { answer: 'Fixed.' }, 5);
    const reward = (submitted.structured_content as { reward: number }).reward;
    expect(reward).toBeGreaterThan(0.9);
    const rec = await recordOf(replicas[2]!.url, replicas[2]!.key, sid);
    expect(rec.calls.map((c) => c.status)).toEqual(['ok', 'ok', 'ok']);
    expect(rec.grades.map((g) => g.score)).toEqual([reward]);
  }, 300_000);

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

  it('keeps an ORS session open across a kill -9 and restart of its server between two tool calls', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'rft-sessions-restart-'));
    const key = 'sessions-restart-key-0123456789abcdef';
    const boot = () => spawnServer({ RFT_DATA_DIR: dataDir, RFT_API_KEYS: `t:${key}`, RFT_RATE_LIMIT: '0' }, 120_000);
    try {
      let server = await boot();
      const answer = `Answer: ${String(finqa[5]!.reference_answer)}`;
      // requests: create_session, create, prompt, the first call, then the second after the restart
      const { sid, reward } = await orsEpisode(async (n) => {
        if (n === 4) {
          await server.stop('SIGKILL');
          server = await boot();
        }
        return new OrsClient(server.url, { token: key });
      }, 5, answer);
      const expected = await gradeThroughApi(replicas[0]!, itemOf(finqa[5]!), answer);
      expect(reward).toBe(expected);
      const rec = await recordOf(server.url, key, sid);
      expect(rec.calls.map((c) => c.status)).toEqual(['ok', 'ok']);
      expect(rec.grades.map((g) => g.score)).toEqual([expected]);
      await server.stop();
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 240_000);

  it('keeps an OpenEnv /mcp session open across a kill -9 and restart of its server between two tool calls', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'rft-sessions-restart-'));
    const key = 'sessions-restart-key-0123456789abcdef';
    const boot = async (): Promise<{ server: ChildServer; door: string }> => {
      const server = await spawnServer({ RFT_DATA_DIR: dataDir, RFT_API_KEYS: `t:${key}`, RFT_PRIVATE_PORT: '0', RFT_LOG_LEVEL: 'info', RFT_RATE_LIMIT: '0' }, 120_000);
      let door = '';
      await vi.waitFor(() => {
        door = /"url":"(http[^"]+)","msg":"private listener/.exec(server.stdout())?.[1] ?? '';
        expect(door).not.toBe('');
      }, { timeout: 30_000, interval: 50 });
      return { server, door };
    };
    try {
      let current = await boot();
      const answer = `Answer: ${String(finqa[9]!.reference_answer)}`;
      // requests: create, list, the first call and its retry, then (after the restart) the second call and the submit
      const { sid, reward } = await openEnvSession(async (n) => {
        if (n === 4) {
          await current.server.stop('SIGKILL');
          current = await boot();
        }
        return current.door;
      }, 9, answer);
      const expected = await gradeThroughApi(replicas[0]!, itemOf(finqa[9]!), answer);
      expect(reward).toBe(expected);
      const rec = await recordOf(current.server.url, key, sid);
      expect(rec.calls.map((c) => c.status)).toEqual(['ok', 'ok']);
      expect(rec.grades.map((g) => g.score)).toEqual([expected]);
      await current.server.stop();
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 240_000);
});
