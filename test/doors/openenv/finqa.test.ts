// The OpenEnv door with finqa (no sandbox), driven as OpenEnv's EnvClient / MCPToolClient drive a server
// (test/helpers/openenv-client.ts cites their code): rewards equal /grade's for the same answers, one socket
// for many episodes, the model's mistakes as observations, client mistakes and our failures as `error`
// frames, an abrupt close, the stateless HTTP routes, and no hidden field in anything a client can read.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { repoRoot, startTestServer, type TestServer } from '../../helpers/server.js';
import { gradeThroughApi } from '../../helpers/agent-rft.js';
import { EnvClient, ServerError } from '../../helpers/openenv-client.js';
import { waitFor } from '../../helpers/wait.js';

type Row = Record<string, unknown>;
const readRows = (file: string): Row[] => readFileSync(join(repoRoot, file), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Row);
const train = readRows('examples/finqa/train.jsonl');
const valid = readRows('examples/finqa/valid.jsonl');
const itemOf = ({ messages: _m, tools: _t, ...item }: Row): Row => item;

describe('OpenEnv door with finqa', () => {
  let server: TestServer;
  let base: string;
  beforeAll(async () => {
    server = await startTestServer({ env: { RFT_PRIVATE_PORT: '0', RFT_SQLITE_SYNC: 'normal' } });
    base = `${server.app.rft.privateDoors!.url}/finqa`;
  });
  afterAll(() => server?.close());

  const grade = (item: Row, text: string): Promise<number> => gradeThroughApi(server, item, text);
  const record = async (traceId: string) => {
    const res = await fetch(`${server.url}/v1/rollouts/${traceId}`, { headers: { authorization: `Bearer ${server.key}` } });
    return (await res.json()) as { door: string; item: Row; calls: { tool: string; status: string }[]; grades: { score: number }[] };
  };

  it('30 episodes over MCPToolClient get the rewards the same answers get through /grade', async () => {
    const plans = Array.from({ length: 30 }, (_, i) => {
      const split = i % 5 === 4 ? 'validation' : 'train';
      const rows = split === 'train' ? train : valid;
      const index = i % rows.length;
      const row = rows[index]!;
      const text = i % 3 === 0 ? `Answer: ${String(row.reference_answer)}` : i % 3 === 1 ? 'Answer: 17' : 'I do not know.';
      return { split, index, row, text };
    });
    const results: { reward: number; expected: number; trace: string }[] = [];
    for (let batch = 0; batch < plans.length; batch += 10) {
      await Promise.all(
        plans.slice(batch, batch + 10).map(async ({ split, index, row, text }) => {
          const env = await new EnvClient(base).connect();
          try {
            const reset = await env.reset({ split, index });
            expect(reset.done).toBe(false);
            expect(reset.observation.messages).toEqual((row.messages as Row[]).map((m) => ({ role: m.role, content: m.content })));
            const tools = await env.listTools();
            expect(tools.map((t) => t.name)).toEqual([...(row.tools as { function: { name: string } }[]).map((t) => t.function.name), 'submit']);
            const out = await env.callTool('search_docs', { query: String((row.messages as { content: string }[]).at(-1)!.content).slice(0, 80) });
            expect(typeof out).toBe('string');
            const submitted = await env.step({ type: 'call_tool', tool_name: 'submit', arguments: { answer: text } });
            expect(submitted.done).toBe(true);
            const state = await env.state();
            expect(state).toMatchObject({ step_count: 3, split, index, done: true });
            results.push({ reward: submitted.reward!, expected: await grade(itemOf(row), text), trace: state.trace_id as string });
          } finally {
            await env.close();
          }
        }),
      );
    }
    for (const r of results) expect(r.reward).toBe(r.expected);
    expect(new Set(results.map((r) => r.reward)).size).toBeGreaterThan(1);
    const rec = await record(results[0]!.trace);
    expect(rec.door).toBe('openenv');
    expect(rec.calls.map((c) => c.tool)).toEqual(['search_docs']);
    expect(rec.grades.map((g) => g.score)).toEqual([results[0]!.reward]);
  }, 180_000);

  it('one socket serves many episodes, each its own rollout; seed and episode_id pick rows as OpenEnv defines them', async () => {
    const env = await new EnvClient(base).connect();
    try {
      const traces = new Set<string>();
      for (let i = 0; i < 5; i++) {
        await env.reset({ split: 'train', index: i });
        await env.callTool('list_docs', {});
        const s = await env.step({ type: 'call_tool', tool_name: 'submit', arguments: { answer: `Answer: ${String(train[i]!.reference_answer)}` } });
        expect(s.reward).toBe(await grade(itemOf(train[i]!), `Answer: ${String(train[i]!.reference_answer)}`));
        const state = await env.state();
        expect(state.step_count).toBe(2);
        traces.add(state.trace_id as string);
      }
      expect(traces.size).toBe(5);
      // The same seed, the same row; the same episode id, the same row (and the id is the episode's).
      const a = await env.reset({ seed: 7 });
      const b = await env.reset({ seed: 7 });
      expect(a.observation.index).toBe(7 % train.length);
      expect(b.observation.index).toBe(a.observation.index);
      const c = await env.reset({ episode_id: 'ep-42' });
      const d = await env.reset({ episode_id: 'ep-42' });
      expect(d.observation.index).toBe(c.observation.index);
      expect((await env.state()).episode_id).toBe('ep-42');
    } finally {
      await env.close();
    }
  });

  it("the model's mistakes are observations; a client's are error frames and the socket goes on", async () => {
    const env = await new EnvClient(base).connect();
    try {
      // before any reset: list_tools answers (OpenEnv's needs no reset), a call is the client's mistake
      expect((await env.listTools()).map((t) => t.name)).toContain('submit');
      await expect(env.step({ type: 'call_tool', tool_name: 'list_docs', arguments: {} })).rejects.toMatchObject({ data: { code: 'RFT_ERR_OPENENV_NO_EPISODE', retryable: false } });
      await env.reset({ index: 2 });
      const unknown = await env.step({ type: 'call_tool', tool_name: 'shell', arguments: { command: 'id' } });
      expect(unknown.observation).toMatchObject({ tool_name: 'shell', result: null, error: { error_type: 'tool_not_found' } });
      const bad = await env.step({ type: 'call_tool', tool_name: 'search_docs', arguments: { top_k: 'many' } });
      expect(bad.observation).toMatchObject({ result: null, error: { error_type: 'invalid_args' } });
      await expect(env.callTool('submit', {})).rejects.toThrow(/invalid_args/);
      for (const frame of ['not json', JSON.stringify({ type: 'dance' }), JSON.stringify({ type: 'step', data: { type: 'call_tool' } })]) {
        env.ws!.send(frame);
        const reply = await env.receive();
        expect(reply).toMatchObject({ type: 'error', data: { code: 'RFT_ERR_BAD_REQUEST', retryable: false } });
      }
      const done = await env.step({ type: 'call_tool', tool_name: 'submit', arguments: { answer: 'Answer: 0' } });
      expect(done.done).toBe(true);
      const after = await env.step({ type: 'call_tool', tool_name: 'list_docs', arguments: {} });
      expect(after).toMatchObject({ done: true, reward: done.reward, observation: { error: { error_type: 'execution_error' } } });
      const rec = await record((await env.state()).trace_id as string);
      expect(rec.calls.map((c) => c.status)).toEqual(['invalid_arguments']);
    } finally {
      await env.close();
    }
  });

  it('a spent budget ends the episode, graded as it stands with no answer', async () => {
    const env = await new EnvClient(base).connect();
    try {
      const row = train[3]!;
      await env.reset({ index: 3 });
      const budget = row.tool_budget as number;
      for (let i = 0; i < budget; i++) expect((await env.step({ type: 'call_tool', tool_name: 'list_docs', arguments: {} })).done).toBe(false);
      const spent = await env.step({ type: 'call_tool', tool_name: 'list_docs', arguments: {} });
      expect(spent.done).toBe(true);
      expect(spent.reward).toBe(await grade(itemOf(row), ''));
      expect(JSON.stringify(spent.observation)).toMatch(/Tool budget exhausted/);
    } finally {
      await env.close();
    }
  });

  it('replies come in order when frames are sent without waiting; MCP frames run on the same episode', async () => {
    const env = await new EnvClient(base).connect();
    try {
      await env.reset({ index: 4 });
      const frames = [
        { type: 'step', data: { type: 'call_tool', tool_name: 'list_docs', arguments: {} } },
        { type: 'mcp', data: { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} } },
        { type: 'mcp', data: { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'read_doc', arguments: { doc_id: 'nope' } } } },
        { type: 'mcp', data: { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'shell', arguments: {} } } },
        { type: 'mcp', data: { jsonrpc: '2.0', id: 4, method: 'openenv/session/create', params: {} } },
        { type: 'state' },
      ];
      for (const f of frames) env.ws!.send(JSON.stringify(f));
      const replies = [];
      for (let i = 0; i < frames.length; i++) replies.push(await env.receive());
      expect(replies.map((r) => r.type)).toEqual(['observation', 'mcp', 'mcp', 'mcp', 'mcp', 'state']);
      expect((replies[1]!.data as { result: { tools: { name: string; inputSchema: unknown }[] } }).result.tools.map((t) => t.name)).toContain('read_doc');
      expect((replies[2]!.data as { id: number; result: { is_error: boolean } })).toMatchObject({ id: 2, result: { is_error: true } });
      expect((replies[3]!.data as { error: { code: number } }).error.code).toBe(-32602);
      expect((replies[4]!.data as { result: { session_id: string } }).result.session_id).toMatch(/^ws_/);
      expect(replies[5]!.data).toMatchObject({ step_count: 3 });
      const sub = await env.mcp({ jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name: 'submit', arguments: { answer: `Answer: ${String(train[4]!.reference_answer)}` } } });
      expect((sub.result as { structured_content: { reward: number; done: boolean } }).structured_content).toEqual({
        reward: await grade(itemOf(train[4]!), `Answer: ${String(train[4]!.reference_answer)}`),
        done: true,
      });
      const rec = await record((replies[5]!.data as { trace_id: string }).trace_id);
      expect(rec.calls.map((c) => c.tool)).toEqual(['list_docs', 'read_doc']);
    } finally {
      await env.close();
    }
  });

  it('an abrupt close ends nothing that was acknowledged, nor the step in flight', async () => {
    const env = await new EnvClient(base).connect();
    await env.reset({ index: 5 });
    await env.callTool('list_docs', {});
    const trace = (await env.state()).trace_id as string;
    const answer = `Answer: ${String(train[5]!.reference_answer)}`;
    // The submit is sent and the connection dropped before its reply can arrive.
    await env.send({ type: 'step', data: { type: 'call_tool', tool_name: 'submit', arguments: { answer } } });
    env.drop();
    const rec = await waitFor('the grade of the submit in flight', async () => {
      const r = await record(trace);
      return r.grades.length > 0 ? r : undefined;
    });
    expect(rec.grades.map((g) => g.score)).toEqual([await grade(itemOf(train[5]!), answer)]);
    expect(rec.calls.map((c) => [c.tool, c.status])).toEqual([['list_docs', 'ok']]);
  });

  it('HTTP /reset and /step are stateless: a fresh episode per step, graded like /grade', async () => {
    const post = async (path: string, body: unknown) => {
      const res = await fetch(`${base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      return { status: res.status, json: (await res.json()) as Record<string, unknown> };
    };
    const reset = await post('/reset', { split: 'train', index: 1 });
    expect(reset.status).toBe(200);
    expect(reset.json).toMatchObject({ reward: null, done: false, observation: { index: 1, split: 'train' } });
    const list = await post('/step', { action: { type: 'list_tools' } });
    expect((list.json.observation as { tools: { name: string }[] }).tools.map((t) => t.name)).toEqual(['search_docs', 'list_docs', 'read_doc', 'submit']);
    const call = await post('/step', { action: { type: 'call_tool', tool_name: 'list_docs', arguments: {} }, index: 1 });
    expect(call.json).toMatchObject({ done: false, reward: null, observation: { tool_name: 'list_docs', error: null, result: { is_error: false } } });
    const answer = `Answer: ${String(train[1]!.reference_answer)}`;
    const sub = await post('/step', { action: { type: 'call_tool', tool_name: 'submit', arguments: { answer } }, index: 1 });
    expect(sub.json).toMatchObject({ done: true, reward: await grade(itemOf(train[1]!), answer) });
    const invalid = await post('/step', { action: { type: 'dance' } });
    expect(invalid.status).toBe(422);
    expect((invalid.json.error as { code: string }).code).toBe('RFT_ERR_BAD_REQUEST');
    const none = await fetch(`${server.app.rft.privateDoors!.url}/nope/reset`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' }).then(async (r) => ({ status: r.status, json: (await r.json()) as Record<string, unknown> }));
    expect(none.status).toBe(404);
    expect((none.json.error as { code: string }).code).toBe('RFT_ERR_UNKNOWN_ENVIRONMENT');
    await expect(new EnvClient(`${server.app.rft.privateDoors!.url}/nope`).connect()).rejects.toThrow(/HTTP 404/);
  });
});

describe('OpenEnv door: no hidden field is readable', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ env: { RFT_PRIVATE_PORT: '0', RFT_SQLITE_SYNC: 'normal' } });
  });
  afterAll(() => server?.close());

  it('resets every row of every split and environment, and finds no reference answer or hidden test in what a client reads', async () => {
    const seen: string[] = [];
    const secrets: string[] = [];
    for (const [envName, files] of [
      ['finqa', { train: 'examples/finqa/train.jsonl', validation: 'examples/finqa/valid.jsonl' }],
      ['coding', { train: 'examples/coding/train.jsonl' }],
    ] as const) {
      const base = `${server.app.rft.privateDoors!.url}/${envName}`;
      const env = await new EnvClient(base).connect();
      try {
        seen.push(JSON.stringify(await env.listTools()));
        for (const [split, file] of Object.entries(files)) {
          const rows = readRows(file);
          for (const [index, row] of rows.entries()) {
            // What the graders read: finqa's reference answers, coding's hidden tests (their folder and files).
            if (typeof row.reference_answer === 'string') secrets.push(row.reference_answer);
            if (row.sandbox) {
              const hidden = (row.sandbox as { hidden: string }).hidden;
              secrets.push(hidden);
              const dir = join(repoRoot, 'examples', hidden);
              for (const f of readdirSync(dir, { recursive: true, withFileTypes: true })) {
                if (f.isFile()) secrets.push(readFileSync(join(f.parentPath, f.name), 'utf8').slice(0, 200));
              }
            }
            seen.push(JSON.stringify(await env.reset({ split, index })));
            seen.push(JSON.stringify(await env.state()));
            seen.push(JSON.stringify(await env.listTools()));
            seen.push(JSON.stringify(await env.mcp({ jsonrpc: '2.0', id: index, method: 'tools/list', params: {} })));
            const res = await fetch(`${base}/reset`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ split, index }) });
            seen.push(await res.text());
          }
        }
      } finally {
        await env.close();
      }
    }
    const all = seen.join('\n');
    // A reference answer that a prompt or a tool schema states (a company's name) is not hidden by the dataset itself.
    const published = ['examples/finqa/train.jsonl', 'examples/finqa/valid.jsonl', 'examples/coding/train.jsonl']
      .flatMap(readRows)
      .map((r) => JSON.stringify([r.messages, r.tools]))
      .join('\n');
    const hidden = secrets.filter((s) => !published.includes(JSON.stringify(s).slice(1, -1)));
    expect(hidden.length).toBeGreaterThan(40);
    for (const s of [...hidden, 'reference_answer', 'unit_tests', 'source_docs', '"sandbox"']) expect(all.includes(s), s).toBe(false);
  }, 120_000);
});

describe('OpenEnv door: a failure of ours', () => {
  let server: TestServer;
  const dir = mkdtempSync(join(tmpdir(), 'rft-openenv-'));
  const gate = join(dir, 'gate');
  beforeAll(async () => {
    // An environment whose tool fails on our side when the test says (a sandbox that became unavailable).
    const envDir = join(dir, 'gated');
    mkdirSync(envDir);
    writeFileSync(join(envDir, 'job.json'), JSON.stringify({ method: { type: 'reinforcement', reinforcement: { tools: [{ name: 'gated_failure' }, { name: 'quick_shell' }], grader: { name: 'exact' } } } }));
    const tools = [{ type: 'function', function: { name: 'gated_failure', parameters: { type: 'object', properties: { gate: { type: 'string' } } } } }];
    writeFileSync(join(envDir, 'train.jsonl'), `${JSON.stringify({ messages: [{ role: 'user', content: 'q' }], tools, reference_answer: '42' })}\n`);
    const units = join(repoRoot, 'test/fixtures/units');
    server = await startTestServer({
      toolsDir: join(units, 'infra-tools'),
      gradersDir: join(units, 'graders'),
      env: { RFT_PRIVATE_PORT: '0', RFT_ENVIRONMENTS: envDir, RFT_DEFAULT_GRADER: 'exact', RFT_SQLITE_SYNC: 'normal' },
    });
  });
  afterAll(async () => {
    await server?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('is a retryable error frame, never an observation; the episode cannot be submitted; the socket goes on', async () => {
    const env = await new EnvClient(`${server.app.rft.privateDoors!.url}/gated`).connect();
    try {
      await env.reset({ index: 0 });
      writeFileSync(gate, '');
      const failed = await env.step({ type: 'call_tool', tool_name: 'gated_failure', arguments: { gate } }).catch((e: unknown) => e);
      expect(failed).toBeInstanceOf(ServerError);
      expect((failed as ServerError).data).toMatchObject({ code: 'RFT_ERR_SANDBOX_UNAVAILABLE', retryable: true });
      expect((failed as ServerError).message).toMatch(/^Server error: /);
      await expect(env.step({ type: 'call_tool', tool_name: 'submit', arguments: { answer: '42' } })).rejects.toMatchObject({
        data: { code: 'RFT_ERR_OPENENV_ROLLOUT_LOST', retryable: true },
      });
      const trace = (await env.state()).trace_id as string;
      const rec = await fetch(`${server.url}/v1/rollouts/${trace}`, { headers: { authorization: `Bearer ${server.key}` } });
      expect(((await rec.json()) as { calls: unknown[]; grades: unknown[] })).toMatchObject({ calls: [], grades: [] });
      // the next episode on the same socket is the model's again
      await env.reset({ index: 0 });
      expect(await env.step({ type: 'call_tool', tool_name: 'submit', arguments: { answer: '42' } })).toMatchObject({ done: true, reward: 1 });
    } finally {
      await env.close();
    }
  });
});
