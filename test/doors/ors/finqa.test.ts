// The ORS door with finqa (no sandbox), driven as the ORS reference client and TRL's OpenReward
// integration drive a server (test/helpers/ors-client.ts cites their code).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cpSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { repoRoot, startTestServer, type TestServer } from '../../helpers/server.js';
import { AuthenticationError, HttpStatusError, OrsClient, ToolCallError, TrlRollout } from '../../helpers/ors-client.js';
import { waitFor } from '../../helpers/wait.js';
import { agentRftScore } from '../../helpers/agent-rft.js';

type Row = Record<string, unknown>;
const readRows = (file: string): Row[] => readFileSync(join(repoRoot, file), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Row);
const splits = { train: readRows('examples/finqa/train.jsonl'), validation: readRows('examples/finqa/valid.jsonl') };
const itemOf = ({ messages: _m, tools: _t, ...item }: Row): Row => item;
const question = (row: Row) => (row.messages as { content: string }[]).at(-1)!.content.slice(0, 80);

describe('ORS door with finqa', () => {
  let server: TestServer;
  let ors: OrsClient;
  beforeAll(async () => {
    server = await startTestServer({ env: { RFT_SQLITE_SYNC: 'normal' } });
    ors = new OrsClient(server.url, { token: server.key });
  });
  afterAll(() => server?.close());

  const agentRft = (row: Row, calls: [string, Record<string, unknown>][], answer: string) => agentRftScore(server, itemOf(row), calls, answer);
  const record = async (traceId: string) => {
    const res = await fetch(`${server.url}/v1/rollouts/${traceId}`, { headers: { authorization: `Bearer ${server.key}` } });
    return (await res.json()) as { door: string; item: Row; calls: { tool: string; status: string; output: string }[] };
  };

  it('episodes by split and index get the rewards the same calls and answers get through /tools and /grade', async () => {
    const plans = Array.from({ length: 24 }, (_, i) => {
      const split = i % 4 === 3 ? 'validation' : 'train';
      const index = i % splits[split].length;
      const row = splits[split][index]!;
      const answer = i % 3 === 0 ? `Answer: ${String(row.reference_answer)}` : i % 3 === 1 ? 'Answer: 17' : 'I do not know.';
      return { split, index, row, answer };
    });
    const results: { reward: number; expected: number; rewards: (number | null)[] }[] = [];
    for (let batch = 0; batch < plans.length; batch += 6) {
      await Promise.all(
        plans.slice(batch, batch + 6).map(({ split, index, row, answer }) =>
          ors.session('finqa', { split, index }, async (s) => {
            const prompt = await s.getPrompt();
            expect(prompt.map((b) => b.text).join('\n')).toContain(question(row).slice(0, 40));
            const tools = (await s.listTools()).map((t) => t.name);
            expect(tools).toEqual([...(row.tools as { function: { name: string } }[]).map((t) => t.function.name), 'submit']);
            const trl = new TrlRollout(s);
            const calls: [string, Record<string, unknown>][] = [['search_docs', { query: question(row) }]];
            expect(await trl.call('search_docs', { query: question(row) })).not.toMatch(/^Error/);
            expect(trl.finished).toBe(false);
            await trl.call('submit', { answer });
            expect(trl.finished).toBe(true);
            results.push({ reward: trl.reward, expected: await agentRft(row, calls, answer), rewards: trl.rewards });
          }),
        ),
      );
    }
    expect(results).toHaveLength(24);
    for (const r of results) {
      expect(r.reward).toBe(r.expected);
      // reward: null on every call but the submit
      expect(r.rewards).toEqual([null, r.expected]);
    }
    expect(new Set(results.map((r) => r.reward)).size).toBeGreaterThan(1);
  }, 180_000);

  it('a session names its rollout in the record, door ors; a task spec from the listing starts the same row', async () => {
    const task = await ors.getTask('finqa', 'train', 2);
    expect(task).toEqual({ split: 'train', index: 2, id: splits.train[2]!.id });
    const sid = await ors.session('finqa', { task_spec: task }, async (s) => {
      expect((await s.getPrompt()).map((b) => b.text).join('')).toContain(question(splits.train[2]!).slice(0, 40));
      await s.callTool('list_docs', {});
      return s.sid;
    });
    const rec = await record(sid);
    expect(rec.door).toBe('ors');
    expect(rec.item.reference_answer).toBe(splits.train[2]!.reference_answer);
    expect(rec.calls.map((c) => c.tool)).toEqual(['list_docs']);
  });

  it('a task spec carrying a forged answer is only an address: the grader reads the dataset row', async () => {
    const row = splits.train[3]!;
    const forged = { split: 'train', index: 3, reference_answer: 'forged', aliases: ['forged'] };
    const reward = await ors.session('finqa', { task_spec: forged }, async (s) => (await s.callTool('submit', { answer: 'Answer: forged' })).reward);
    expect(reward).toBe(await agentRft(row, [], 'Answer: forged'));
    expect(reward).toBe(0);
  });

  it('a stream dropped after its task_id is resumed with it: the call runs once', async () => {
    let drops = 0;
    const dropping = new OrsClient(server.url, {
      token: server.key,
      waitScale: 0.01,
      onStream: ({ path, attempt, req, events }) => {
        if (path.endsWith('/call') && attempt === 1 && events.length === 1 && events[0]![0] === 'task_id') {
          drops++;
          req.destroy();
        }
      },
    });
    const sid = await dropping.session('finqa', { split: 'train', index: 4 }, async (s) => {
      const out = await s.callTool('list_docs', {});
      expect(out.blocks[0]!.text.length).toBeGreaterThan(0);
      return s.sid;
    });
    expect(drops).toBe(1);
    expect((await record(sid)).calls).toHaveLength(1);
  });

  it('the model\'s mistakes are ok:false (an unknown tool, bad input, a bad submit); a second submit finds the episode over', async () => {
    await ors.session('finqa', { split: 'train', index: 5 }, async (s) => {
      await expect(s.callTool('shell', { command: 'id' })).rejects.toBeInstanceOf(ToolCallError);
      await expect(s.callTool('search_docs', { top_k: 'many' })).rejects.toThrow(/query|top_k/);
      await expect(s.callTool('submit', { text: 'x' })).rejects.toBeInstanceOf(ToolCallError);
      const first = await s.callTool('submit', { answer: `Answer: ${String(splits.train[5]!.reference_answer)}` });
      expect(first.finished).toBe(true);
      expect(first.reward).toBeGreaterThan(0);
      const again = await s.callTool('submit', { answer: 'Answer: 0' });
      expect(again).toMatchObject({ finished: true, reward: null });
      const after = await s.callTool('list_docs', {});
      expect(after).toMatchObject({ finished: true, reward: null });
      expect(after.blocks[0]!.text).toMatch(/episode is over/);
    });
  });

  it('a spent budget ends the episode: ok, the budget message, finished, graded with the empty answer, and nothing runs after it', async () => {
    const row = splits.train[0]!;
    const budget = row.tool_budget as number;
    const noAnswer = await agentRft(row, [], '');
    const sid = await ors.session('finqa', { split: 'train', index: 0 }, async (s) => {
      for (let i = 0; i < budget; i++) expect((await s.callTool('list_docs', {})).finished).toBe(false);
      const spent = await s.callTool('list_docs', {});
      expect(spent).toMatchObject({ finished: true, reward: noAnswer });
      expect(spent.blocks[0]!.text).toMatch(/^Tool budget exhausted/);
      expect(await s.callTool('submit', { answer: `Answer: ${String(row.reference_answer)}` })).toMatchObject({ finished: true, reward: null });
      return s.sid;
    });
    const rec = await record(sid);
    expect(rec.calls.map((c) => c.status)).toEqual([...Array<string>(budget).fill('ok'), 'budget_exceeded']);
  });

  it('no reference answer or grader field is readable through any ORS route', async () => {
    const seen: string[] = [];
    const keep = (v: unknown) => seen.push(JSON.stringify(v));
    const envs = (await ors.request('GET', '/list_environments')) as string[];
    expect(envs).toEqual(expect.arrayContaining(['finqa', 'coding']));
    for (const env of envs) {
      keep(await ors.listTools(env));
      for (const split of await ors.listSplits(env)) {
        const n = await ors.numTasks(env, split);
        keep(await ors.listTasks(env, split));
        keep(await ors.taskRange(env, split, 0, n));
        keep(await ors.taskRange(env, split, -2));
        for (let index = 0; index < n; index++) {
          keep(await ors.getTask(env, split, index));
          await ors.session(env, { split, index }, async (s) => {
            keep(await s.getPrompt());
            keep(await s.listTools());
          });
        }
      }
    }
    const all = seen.join('\n');
    // What every prompt and tool shows by design (the system prompt's examples of answer formats, the questions).
    const shown = JSON.stringify([...splits.train, ...splits.validation].map((r) => r.messages)) + JSON.stringify(await ors.listTools('finqa'));
    for (const field of ['reference_answer', 'aliases', 'tolerance', 'answer_type', 'unit_tests', 'hidden', 'sandbox', 'source_docs']) expect(all).not.toContain(`"${field}"`);
    for (const row of [...splits.train, ...splits.validation]) {
      const ref = String(row.reference_answer);
      // (an answer that a question or the system prompt's format examples name is in the prompts by design)
      if (shown.includes(ref)) continue;
      expect(all.includes(ref), `reference answer ${ref} of ${String(row.id)}`).toBe(false);
    }
    for (const row of readRows('examples/coding/train.jsonl')) {
      const hidden = (row.sandbox as { hidden: string }).hidden;
      expect(all).not.toContain(hidden);
    }
  }, 300_000);

  it('refuses every route without a key or with a wrong one (401, final for the client); takes Authorization too', async () => {
    const none = new OrsClient(server.url);
    await expect(none.request('GET', '/list_environments')).rejects.toBeInstanceOf(AuthenticationError);
    await expect(none.listTools('finqa')).rejects.toBeInstanceOf(AuthenticationError);
    const wrong = new OrsClient(server.url, { token: 'not-a-key' });
    await expect(wrong.session('finqa', { split: 'train', index: 0 }, async () => 0)).rejects.toBeInstanceOf(AuthenticationError);
    for (const [method, path] of [['POST', '/create'], ['POST', '/ping'], ['GET', '/finqa/prompt'], ['POST', '/finqa/call'], ['POST', '/finqa/task']] as const) {
      const res = await fetch(`${server.url}${path}`, { method, headers: { 'x-session-id': 'x', 'content-type': 'application/json' }, body: method === 'POST' ? '{}' : null });
      expect(res.status).toBe(401);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('RFT_ERR_AUTH_MISSING');
    }
    const bearer = await fetch(`${server.url}/list_environments`, { headers: { authorization: `Bearer ${server.key}` } });
    expect(bearer.status).toBe(200);
  });

  it('an unknown session is 404 on /ping and 503 (retried, then the client gives up) on calls; a missing one is 400', async () => {
    const fast = new OrsClient(server.url, { token: server.key, waitScale: 0.001 });
    await expect(fast.request('POST', '/ping', undefined, 'ors_gone')).rejects.toMatchObject({ status: 404 });
    await expect(fast.request('GET', '/finqa/prompt', undefined, 'ors_gone')).rejects.toMatchObject({ status: 503 });
    const lost = await fetch(`${server.url}/finqa/call`, {
      method: 'POST',
      headers: { 'x-api-key': server.key, 'x-session-id': 'ors_gone', 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'list_docs', input: {} }),
    });
    expect(lost.status).toBe(503);
    expect(((await lost.json()) as { error: { code: string } }).error.code).toBe('RFT_ERR_ORS_SESSION_LOST');
    await expect(fast.request('GET', '/finqa/prompt')).rejects.toMatchObject({ status: 400 });
  });

  it('a task_id the session never recorded runs as a new call under it; again, its recorded result; with other input, a conflict', async () => {
    // A tool call's task_id is its key in the ledger (no session write of its own): one the ledger lacks never
    // started (its stream broke first, or a failure of ours un-begun it), and runs now.
    const ors = new OrsClient(server.url, { token: server.key, waitScale: 0.001 });
    await ors.session('finqa', { split: 'train', index: 1 }, async (s) => {
      const first = await ors.sse('/finqa/call', { name: 'list_docs', input: {}, task_id: 'deadbeef' }, { sid: s.sid, maxRetries: 1 });
      expect(first).toMatchObject({ ok: true, output: { finished: false } });
      expect(await ors.sse('/finqa/call', { name: 'list_docs', input: {}, task_id: 'deadbeef' }, { sid: s.sid, maxRetries: 1 })).toEqual(first);
      const other = await ors.sse('/finqa/call', { name: 'list_docs', input: { page: 2 }, task_id: 'deadbeef' }, { sid: s.sid, maxRetries: 1 }).catch((e: unknown) => e);
      expect(other).toBeInstanceOf(HttpStatusError);
      expect((other as HttpStatusError).status).toBe(409);
      expect((await record(s.sid)).calls.map((c) => c.tool)).toEqual(['list_docs']);
    });
  });
});

describe('ORS door sessions', () => {
  it('a session unused past RFT_ORS_IDLE_MS is deleted (its /ping answers 404)', async () => {
    const server = await startTestServer({ env: { RFT_ORS_IDLE_MS: '1000', RFT_SQLITE_SYNC: 'normal' } });
    try {
      const ors = new OrsClient(server.url, { token: server.key, waitScale: 0.001 });
      await ors.session('finqa', { split: 'train', index: 0 }, async (s) => {
        expect(await ors.request('POST', '/ping', undefined, s.sid)).toEqual({ status: 'ok' });
        // (each probe is a /ping, which keeps a session alive: they are further apart than the idle time)
        await waitFor('the session reaped', async () => ((await ors.request('POST', '/ping', undefined, s.sid).catch((e: unknown) => e)) instanceof HttpStatusError ? true : undefined), 10_000, 1_500);
        // 503 on every try (RFT_ERR_ORS_SESSION_LOST): the client retries, then gives up
        await expect(s.callTool('list_docs', {})).rejects.toThrow(/Exceeded 5 retries.*RFT_ERR_ORS_SESSION_LOST/);
      });
    } finally {
      await server.close();
    }
  }, 30_000);

  it('refuses to boot with an environment whose name a route of the server takes', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rft-ors-shadow-'));
    try {
      cpSync(join(repoRoot, 'examples/finqa'), join(dir, 'tools'), { recursive: true });
      await expect(startTestServer({ env: { RFT_ENVIRONMENTS: dir } })).rejects.toMatchObject({ code: 'RFT_ERR_ORS_SHADOWS_ROUTE' });
      // with the door off, the same environment boots
      const off = await startTestServer({ env: { RFT_ENVIRONMENTS: dir, RFT_ORS: '0' } });
      await off.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
