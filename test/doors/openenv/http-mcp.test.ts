// OpenEnv's production-mode HTTP `POST /{env}/mcp` (docs/openenv.md, "HTTP /mcp sessions"), sent as
// OpenEnv's MCPClientBase sends it (mcp_client.py _production_mcp_request: JSON-RPC 2.0 over
// application/json, ids counted up, session_id in params): a session graded like /grade, calls kept
// exactly once by their JSON-RPC id, one grade per session, the unanswered end at a close and when idle,
// the JSON-RPC errors as OpenEnv answers them with our codes, and a failure of ours the client retries.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { repoRoot, startTestServer, type TestServer } from '../../helpers/server.js';
import { gradeThroughApi } from '../../helpers/agent-rft.js';
import { waitFor } from '../../helpers/wait.js';
import { mcpPost, type RpcReply } from '../../helpers/openenv-mcp.js';

type Row = Record<string, unknown>;
const train = readFileSync(join(repoRoot, 'examples/finqa/train.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Row);
const itemOf = ({ messages: _m, tools: _t, ...item }: Row): Row => item;

interface Rec {
  door: string;
  calls: { call_id: string; tool: string; status: string }[];
  grades: { score: number }[];
}

describe('OpenEnv HTTP /mcp sessions with finqa', () => {
  let server: TestServer;
  let url: string;
  let id = 0;
  beforeAll(async () => {
    server = await startTestServer({ env: { RFT_PRIVATE_PORT: '0', RFT_SQLITE_SYNC: 'normal' } });
    url = `${server.app.rft.privateDoors!.url}/finqa/mcp`;
  });
  afterAll(() => server?.close());

  const rpc = (method: string, params: Record<string, unknown> = {}, rid: string | number | null = ++id) => mcpPost(url, method, params, rid);
  const record = async (trace: string): Promise<Rec> => (await (await fetch(`${server.url}/v1/rollouts/${trace}`, { headers: { authorization: `Bearer ${server.key}` } })).json()) as Rec;
  const create = async (index: number): Promise<string> => {
    const r = await rpc('openenv/session/create', { split: 'train', index });
    expect(r.status).toBe(200);
    return r.result!.session_id as string;
  };

  it('plays a session: create with the prompt, the row\'s tools, calls, a submit graded as /grade grades it', async () => {
    const row = train[0]!;
    const created = await rpc('openenv/session/create', { split: 'train', index: 0 });
    expect(created).toMatchObject({ status: 200, jsonrpc: '2.0', id, result: { split: 'train', index: 0, environment: 'finqa' } });
    expect(created.result!.messages).toEqual((row.messages as Row[]).map((m) => ({ role: m.role, content: m.content })));
    expect(JSON.stringify(created)).not.toContain(String(row.reference_answer));
    const sid = created.result!.session_id as string;
    const tools = await rpc('tools/list', { session_id: sid });
    expect((tools.result!.tools as { name: string }[]).map((t) => t.name)).toEqual([...(row.tools as { function: { name: string } }[]).map((t) => t.function.name), 'submit']);
    const out = await rpc('tools/call', { name: 'search_docs', arguments: { query: 'revenue' }, session_id: sid });
    expect(out.result).toMatchObject({ is_error: false, content: [{ type: 'text' }] });
    expect(typeof out.result!.data).toBe('string');
    const bad = await rpc('tools/call', { name: 'search_docs', arguments: { nope: 1 }, session_id: sid });
    expect(bad.result).toMatchObject({ is_error: true });
    const text = `Answer: ${String(row.reference_answer)}`;
    const submitted = await rpc('tools/call', { name: 'submit', arguments: { answer: text }, session_id: sid });
    const expected = await gradeThroughApi(server, itemOf(row), text);
    expect(submitted.result).toMatchObject({ is_error: false, structured_content: { reward: expected, done: true } });
    const rec = await record(sid);
    expect(rec.door).toBe('openenv');
    expect(rec.calls.map((c) => c.status)).toEqual(['ok', 'invalid_arguments']);
    expect(rec.grades.map((g) => g.score)).toEqual([expected]);
  });

  it('keeps a call once by its JSON-RPC id: a retry (sent again or at once) gets the recorded result; another call under a used id is a new call', async () => {
    const sid = await create(1);
    const call = { name: 'search_docs', arguments: { query: 'Halvorsen' }, session_id: sid };
    const [a, b] = await Promise.all([rpc('tools/call', call, 'call-1'), rpc('tools/call', call, 'call-1')]);
    const c = await rpc('tools/call', call, 'call-1');
    expect(b.result).toEqual(a.result);
    expect(c.result).toEqual(a.result);
    // (JSON-RPC lets a client reuse an id once answered: another call under it runs)
    expect((await rpc('tools/call', { ...call, arguments: { query: 'revenue' } }, 'call-1')).result).toMatchObject({ is_error: false });
    // (a number id is not the string of it)
    expect((await rpc('tools/call', { name: 'list_docs', arguments: {}, session_id: sid }, 7)).result).toMatchObject({ is_error: false });
    expect((await rpc('tools/call', { name: 'list_docs', arguments: {}, session_id: sid }, '7')).result).toMatchObject({ is_error: false });
    expect((await record(sid)).calls.map((x) => x.call_id)).toEqual(['mcp-1', 'mcp-2', 'mcp-3', 'mcp-4']);
  });

  it('grades a session once: a retried submit gets the same reward, another answer finds the episode over', async () => {
    const row = train[2]!;
    const sid = await create(2);
    const first = await rpc('tools/call', { name: 'submit', arguments: { answer: 'Answer: 17' }, session_id: sid }, 'submit');
    const expected = await gradeThroughApi(server, itemOf(row), 'Answer: 17');
    expect(first.result!.structured_content).toEqual({ reward: expected, done: true });
    expect((await rpc('tools/call', { name: 'submit', arguments: { answer: 'Answer: 17' }, session_id: sid }, 'submit')).result).toEqual(first.result);
    const other = await rpc('tools/call', { name: 'submit', arguments: { answer: `Answer: ${String(row.reference_answer)}` }, session_id: sid });
    expect(other.result).toMatchObject({ is_error: true, structured_content: { reward: expected, done: true } });
    expect(String(other.result!.data)).toMatch(/episode is over/);
    expect((await rpc('tools/call', { name: 'list_docs', arguments: {}, session_id: sid })).result).toMatchObject({ is_error: true });
    expect((await record(sid)).grades.map((g) => g.score)).toEqual([expected]);
  });

  it('a close ends an unanswered episode graded with an empty answer, once; the closed session refuses calls', async () => {
    const sid = await create(3);
    await rpc('tools/call', { name: 'list_docs', arguments: {}, session_id: sid });
    const closed = await rpc('openenv/session/close', { session_id: sid });
    expect(closed).toMatchObject({ status: 200, result: { session_id: sid, closed: true } });
    expect((await rpc('openenv/session/close', { session_id: sid })).result).toEqual({ session_id: sid, closed: true });
    const expected = await gradeThroughApi(server, itemOf(train[3]!), '');
    expect((await record(sid)).grades.map((g) => g.score)).toEqual([expected]);
    const after = await rpc('tools/call', { name: 'list_docs', arguments: {}, session_id: sid });
    expect(after).toMatchObject({ status: 200, error: { code: -32602, data: { code: 'RFT_ERR_OPENENV_SESSION_CLOSED', retryable: false } } });
    expect((await rpc('tools/list', { session_id: sid })).error).toMatchObject({ code: -32602, data: { code: 'RFT_ERR_OPENENV_SESSION_CLOSED' } });
  });

  it('answers JSON-RPC errors as OpenEnv does, with our codes and nothing for a client to retry', async () => {
    const sid = await create(5);
    const unknown = await rpc('tools/call', { name: 'list_docs', arguments: {}, session_id: 'oe_nope' }, 'u');
    expect(unknown).toMatchObject({ status: 200, id: 'u', error: { code: -32602, message: expect.stringMatching(/^Unknown session_id: oe_nope/), data: { code: 'RFT_ERR_OPENENV_SESSION_UNKNOWN', retryable: false } } });
    expect((await rpc('openenv/session/close', {})).error).toMatchObject({ code: -32602, message: "Invalid params - 'session_id' is required" });
    expect((await rpc('tools/call', { arguments: {}, session_id: sid })).error).toMatchObject({ code: -32602, message: "Missing 'name' in params" });
    expect((await rpc('tools/call', { name: 'list_docs', arguments: [1], session_id: sid })).error).toMatchObject({ code: -32602 });
    expect((await rpc('resources/list', {})).error).toMatchObject({ code: -32601, message: 'Method not found: resources/list' });
    expect((await rpc('openenv/session/create', { split: 'train', index: 10_000 })).error).toMatchObject({ code: -32602, data: { code: 'RFT_ERR_BAD_REQUEST' } });
    expect((await rpc('openenv/session/create', { index: -1 })).error).toMatchObject({ code: -32602, data: { code: 'RFT_ERR_BAD_REQUEST' } });
    // a tool the row lacks, as OpenEnv's mcp_server path answers it
    expect((await rpc('tools/call', { name: 'run_python', arguments: {}, session_id: sid })).error).toMatchObject({ code: -32602, message: 'Tool not found: run_python' });
    const post = (body: string) => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body }).then(async (r) => ({ status: r.status, body: (await r.json()) as RpcReply }));
    expect(await post('{"jsonrpc": "2.0", "method"')).toMatchObject({ status: 200, body: { id: null, error: { code: -32700 } } });
    expect(await post('{"jsonrpc": "1.0", "method": "tools/list", "id": 3}')).toMatchObject({ status: 200, body: { error: { code: -32600 } } });
    expect(await post('{"jsonrpc": "2.0", "method": "tools/list", "params": [], "id": 3}')).toMatchObject({ status: 200, body: { error: { code: -32600 } } });
    const other = await fetch(`${server.app.rft.privateDoors!.url}/nowhere/mcp`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"jsonrpc":"2.0","method":"tools/list","id":1}' });
    expect(other.status).toBe(404);
    expect(((await other.json()) as RpcReply).error!.data).toMatchObject({ code: 'RFT_ERR_UNKNOWN_ENVIRONMENT' });
    // nothing above was charged to the session
    expect((await record(sid)).calls).toEqual([]);
  });

  it('without a session_id, tools/list is the environment\'s and a tools/call runs in a fresh episode, as OpenEnv\'s stateless call', async () => {
    const listed = await rpc('tools/list', {});
    expect((listed.result!.tools as { name: string; inputSchema: unknown }[]).map((t) => t.name)).toContain('submit');
    const row = train[6]!;
    const text = `Answer: ${String(row.reference_answer)}`;
    const r = await rpc('tools/call', { name: 'submit', arguments: { answer: text }, split: 'train', index: 6 });
    expect(r.result!.structured_content).toEqual({ reward: await gradeThroughApi(server, itemOf(row), text), done: true });
  });
});

describe('OpenEnv HTTP /mcp: the idle end', () => {
  it('a session with no request for RFT_OPENENV_IDLE_MS ends unanswered, graded with an empty answer', async () => {
    const idle = await startTestServer({ env: { RFT_PRIVATE_PORT: '0', RFT_SQLITE_SYNC: 'normal', RFT_OPENENV_IDLE_MS: '300' } });
    try {
      const at = `${idle.app.rft.privateDoors!.url}/finqa/mcp`;
      const sid = (await mcpPost(at, 'openenv/session/create', { index: 4 }, 1)).result!.session_id as string;
      expect((await mcpPost(at, 'tools/call', { name: 'list_docs', arguments: {}, session_id: sid }, 2)).result).toMatchObject({ is_error: false });
      const rec = async (): Promise<Rec> => (await (await fetch(`${idle.url}/v1/rollouts/${sid}`, { headers: { authorization: `Bearer ${idle.key}` } })).json()) as Rec;
      const grades = await waitFor('the idle end\'s grade', async () => ((await rec()).grades.length > 0 ? (await rec()).grades : undefined), 20_000, 50);
      expect(grades.map((g) => g.score)).toEqual([await gradeThroughApi(idle, itemOf(train[4]!), '')]);
      expect((await mcpPost(at, 'tools/call', { name: 'list_docs', arguments: {}, session_id: sid }, 3)).error).toMatchObject({ code: -32602, data: { code: 'RFT_ERR_OPENENV_SESSION_UNKNOWN' } });
      expect((await rec()).calls.map((c) => c.status)).toEqual(['ok']);
    } finally {
      await idle.close();
    }
  });

  it('a session open when the server shuts down is graded neither by its close after the restart nor by its idle end there', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'rft-openenv-mcp-restart-'));
    const at = (s: TestServer) => `${s.app.rft.privateDoors!.url}/finqa/mcp`;
    const rec = async (s: TestServer, sid: string): Promise<Rec> => (await (await fetch(`${s.url}/v1/rollouts/${sid}`, { headers: { authorization: `Bearer ${s.key}` } })).json()) as Rec;
    try {
      const closing = await startTestServer({ dataDir, env: { RFT_PRIVATE_PORT: '0', RFT_SQLITE_SYNC: 'normal' } });
      const sids: string[] = [];
      for (const index of [5, 6]) {
        const sid = (await mcpPost(at(closing), 'openenv/session/create', { index }, 1)).result!.session_id as string;
        expect((await mcpPost(at(closing), 'tools/call', { name: 'list_docs', arguments: {}, session_id: sid }, 2)).result).toMatchObject({ is_error: false });
        sids.push(sid);
      }
      await closing.close();
      // (an idle limit the restart takes far less than: the first one's close finds its session there)
      const again = await startTestServer({ dataDir, env: { RFT_PRIVATE_PORT: '0', RFT_SQLITE_SYNC: 'normal', RFT_OPENENV_IDLE_MS: '3000' } });
      try {
        expect((await mcpPost(at(again), 'openenv/session/close', { session_id: sids[0] }, 3)).result).toEqual({ session_id: sids[0], closed: true });
        // a session of the new process, left idle, is graded there: its sweep runs and grades
        const fresh = (await mcpPost(at(again), 'openenv/session/create', { index: 7 }, 1)).result!.session_id as string;
        await mcpPost(at(again), 'tools/call', { name: 'list_docs', arguments: {}, session_id: fresh }, 2);
        await waitFor('the new session\'s idle grade', async () => ((await rec(again, fresh)).grades.length > 0 ? true : undefined));
        await waitFor('the old session to leave the store', async () => ((await again.app.rft.store.getSession('openenv', sids[1]!)) === undefined ? true : undefined));
        for (const sid of sids) {
          expect((await rec(again, sid)).calls.map((c) => c.tool), sid).toEqual(['list_docs']);
          expect((await rec(again, sid)).grades, sid).toEqual([]);
        }
      } finally {
        await again.close();
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 60_000);

});

describe('OpenEnv HTTP /mcp: a failure of ours', () => {
  let server: TestServer;
  let url: string;
  const dir = mkdtempSync(join(tmpdir(), 'rft-openenv-mcp-'));
  const gate = join(dir, 'gate');
  const gradeGate = join(dir, 'grade-gate');
  beforeAll(async () => {
    // An environment whose tool and grader fail on our side when the test says (a sandbox that became unavailable, a grader that could not score).
    const envDir = join(dir, 'gated');
    mkdirSync(envDir);
    writeFileSync(join(envDir, 'job.json'), JSON.stringify({ method: { type: 'reinforcement', reinforcement: { tools: [{ name: 'fails_while_gated' }], grader: { name: 'gated_exact' } } } }));
    const tools = [{ type: 'function', function: { name: 'fails_while_gated', parameters: { type: 'object', properties: { gate: { type: 'string' } } } } }];
    writeFileSync(join(envDir, 'train.jsonl'), `${JSON.stringify({ messages: [{ role: 'user', content: 'q' }], tools, reference_answer: '42', grade_gate: gradeGate })}\n`);
    const units = join(repoRoot, 'test/fixtures/units');
    server = await startTestServer({
      toolsDir: join(units, 'flaky-tools'),
      gradersDir: join(units, 'flaky-graders'),
      env: { RFT_PRIVATE_PORT: '0', RFT_ENVIRONMENTS: envDir, RFT_DEFAULT_GRADER: 'gated_exact', RFT_SQLITE_SYNC: 'normal' },
    });
    url = `${server.app.rft.privateDoors!.url}/gated/mcp`;
  });
  afterAll(async () => {
    await server?.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const record = async (trace: string): Promise<Rec> => (await (await fetch(`${server.url}/v1/rollouts/${trace}`, { headers: { authorization: `Bearer ${server.key}` } })).json()) as Rec;

  it('is a 5xx JSON-RPC error marked retryable; the same id sent again runs it, and the session is the model\'s again', async () => {
    const sid = (await mcpPost(url, 'openenv/session/create', { index: 0 }, 1)).result!.session_id as string;
    writeFileSync(gate, '');
    const call = { name: 'fails_while_gated', arguments: { gate }, session_id: sid };
    const failed = await mcpPost(url, 'tools/call', call, 2);
    expect(await mcpPost(url, 'tools/call', call, 2)).toEqual(failed);
    expect(failed).toMatchObject({ status: 503, id: 2, error: { code: -32000, data: { code: 'RFT_ERR_SANDBOX_UNAVAILABLE', retryable: true } } });
    expect((await record(sid)).calls).toEqual([]);
    // until its retry succeeds, the episode is not the model's: no reward for it
    expect(await mcpPost(url, 'tools/call', { name: 'submit', arguments: { answer: '42' }, session_id: sid }, 3)).toMatchObject({
      status: 503, error: { code: -32000, data: { code: 'RFT_ERR_OPENENV_ROLLOUT_LOST', retryable: true } },
    });
    rmSync(gate);
    expect((await mcpPost(url, 'tools/call', call, 2)).result).toMatchObject({ is_error: false, data: 'ran' });
    expect((await mcpPost(url, 'tools/call', { name: 'submit', arguments: { answer: '42' }, session_id: sid }, 3)).result).toMatchObject({ structured_content: { reward: 1, done: true } });
    const rec = await record(sid);
    expect(rec.calls.map((c) => c.status)).toEqual(['ok']);
    expect(rec.grades.map((g) => g.score)).toEqual([1]);
  });

  it('an episode whose failed call is never retried is never graded, not even at its close', async () => {
    const sid = (await mcpPost(url, 'openenv/session/create', { index: 0 }, 1)).result!.session_id as string;
    writeFileSync(gate, '');
    try {
      expect((await mcpPost(url, 'tools/call', { name: 'fails_while_gated', arguments: { gate }, session_id: sid }, 2)).status).toBe(503);
    } finally {
      rmSync(gate);
    }
    expect((await mcpPost(url, 'openenv/session/close', { session_id: sid }, 3)).result).toEqual({ session_id: sid, closed: true });
    expect((await record(sid)).grades).toEqual([]);
  });

  it('a close whose grade failed on our side is a retryable 5xx, and its retry grades the episode once', async () => {
    const sid = (await mcpPost(url, 'openenv/session/create', { index: 0 }, 1)).result!.session_id as string;
    writeFileSync(gradeGate, '');
    try {
      expect(await mcpPost(url, 'openenv/session/close', { session_id: sid }, 2)).toMatchObject({
        status: 500, error: { code: -32000, data: { code: 'RFT_ERR_GRADER_FAILED', retryable: true } },
      });
    } finally {
      rmSync(gradeGate);
    }
    expect((await record(sid)).grades.filter((g) => g.score !== null)).toEqual([]);
    expect((await mcpPost(url, 'openenv/session/close', { session_id: sid }, 2)).result).toEqual({ session_id: sid, closed: true });
    expect((await record(sid)).grades.filter((g) => g.score !== null).map((g) => g.score)).toEqual([0]);
  });
});
