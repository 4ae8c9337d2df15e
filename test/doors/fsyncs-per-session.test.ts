// How many fsyncs a session waits for, one at a time (issue 41: "one trainer at a time as fast as the peers").
// The writes a retry or a budget depends on stay durable (src/store/README.md, "Fsync policy"); those of one
// step that need not follow each other share one commit: NeMo Gym's seed opens the rollout and writes its
// session in one, ORS's /create opens the rollout and binds it to the session in one, its submit records its
// task_id and the episode's end in one.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { join } from 'node:path';
import { repoRoot, startTestServer, type TestServer } from '../helpers/server.js';

const disk = vi.hoisted(() => ({ syncs: 0 }));
vi.mock('node:fs', async (importOriginal) => {
  const fs = await importOriginal<typeof import('node:fs')>();
  const fdatasync = (fd: number, cb: (e: NodeJS.ErrnoException | null) => void) => {
    disk.syncs++;
    fs.fdatasync(fd, cb);
  };
  return { ...fs, default: { ...fs, fdatasync }, fdatasync };
});

const row = { responses_create_params: { input: [{ role: 'user', content: 'q' }], tools: [{ type: 'function', name: 'noop', parameters: { type: 'object', properties: {} }, strict: true }] }, reference_answer: '42' };

describe('fsyncs a session waits for, one request at a time (SQLite sync=full)', () => {
  let server: TestServer;
  let gym: string;
  beforeAll(async () => {
    server = await startTestServer({
      toolsDir: join(repoRoot, 'bench/units/tools'),
      gradersDir: join(repoRoot, 'bench/units/graders'),
      env: { RFT_SQLITE_SYNC: 'full', RFT_NEMO_GYM_PORT: '0', RFT_ENVIRONMENTS: join(repoRoot, 'bench/units/environments'), RFT_RATE_LIMIT: '0' },
    });
    gym = server.app.rft.nemoGym!.url;
  });
  afterAll(() => server?.close());

  /** The fdatasyncs begun while the request ran (none is begun after its reply by these steps). */
  const counted = async (f: () => Promise<Response>): Promise<{ syncs: number; res: Response; text: string }> => {
    const before = disk.syncs;
    const res = await f();
    const text = await res.text();
    expect(res.status, text).toBe(200);
    return { syncs: disk.syncs - before, res, text };
  };

  it('NeMo Gym: a seed is one fsync (the rollout opened and its session written in one commit), and the session serves', async () => {
    const seeds = [];
    for (let i = 0; i < 3; i++) seeds.push(await counted(() => fetch(`${gym}/seed_session`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(row) })));
    expect(seeds.map((s) => s.syncs)).toEqual([1, 1, 1]);
    const cookie = seeds[0]!.res.headers.get('set-cookie')!.split(';')[0]!;
    const call = await counted(() => fetch(`${gym}/noop`, { method: 'POST', headers: { 'content-type': 'application/json', cookie }, body: '{"q":"1"}' }));
    expect(call.text).toBe('ok');
    const output = [
      { type: 'function_call', id: 'fc', call_id: 'c', name: 'noop', arguments: '{"q":"1"}', status: 'completed' },
      { type: 'message', id: 'm', status: 'completed', role: 'assistant', content: [{ type: 'output_text', text: '42', annotations: [] }] },
    ];
    const verify = await counted(() => fetch(`${gym}/verify`, { method: 'POST', headers: { 'content-type': 'application/json', cookie }, body: JSON.stringify({ ...row, response: { id: 'r', created_at: 0, model: 'm', object: 'response', output, parallel_tool_calls: false, tool_choice: 'auto', tools: [] } }) }));
    expect(JSON.parse(verify.text)).toMatchObject({ reward: 1 });
  });

  it('ORS: a /create is two fsyncs, a submit two (its task_id with the episode\'s end, then the grade); the episode is over after it', async () => {
    const key = { 'x-api-key': server.key };
    const synced = disk.syncs;
    const created = await (await fetch(`${server.url}/create_session`, { method: 'POST', headers: { ...key, accept: 'text/event-stream' } })).text();
    const sid = /event: task_id\r?\ndata: (\S+)/.exec(created)![1]!;
    const h = { ...key, 'x-session-id': sid, 'content-type': 'application/json' };
    // /create_session's write is 'committed': its own fsync begins COMMITTED_SYNC_DELAY_MS later unless a durable
    // turn comes first. Counted here once begun: on a loaded machine /create may come later than that, and its
    // count would take it in.
    await vi.waitFor(() => expect(disk.syncs).toBeGreaterThan(synced), { timeout: 10_000 });
    // The row claimed, then the rollout opened and bound to the session in one commit.
    expect((await counted(() => fetch(`${server.url}/create`, { method: 'POST', headers: h, body: JSON.stringify({ env_name: 'bench', split: 'train', index: 0 }) }))).syncs).toBe(2);
    const call = (input: object) => counted(() => fetch(`${server.url}/bench/call`, { method: 'POST', headers: { ...h, accept: 'text/event-stream' }, body: JSON.stringify(input) }));
    const end = (text: string) => JSON.parse(/event: end\r?\ndata: (.*)/.exec(text)![1]!) as { ok: boolean; output: { reward: number | null; finished: boolean; blocks: { text: string }[] } };
    const submit = await call({ name: 'submit', input: { answer: '42' } });
    expect(end(submit.text).output).toMatchObject({ reward: 1, finished: true });
    expect(submit.syncs).toBe(2);
    // Ended by it: a later call (a second submit included) is told the episode is over, ungraded.
    for (const c of [{ name: 'noop', input: { q: 'x' } }, { name: 'submit', input: { answer: '41' } }]) {
      expect(end((await call(c)).text).output).toMatchObject({ reward: null, finished: true, blocks: [{ text: 'The episode is over: no tool can be called after it ends.' }] });
    }
  });

  it('ORS: a submit whose input is not one ends nothing: the model is told, and its next submit is graded', async () => {
    const key = { 'x-api-key': server.key };
    const created = await (await fetch(`${server.url}/create_session`, { method: 'POST', headers: { ...key, accept: 'text/event-stream' } })).text();
    const sid = /event: task_id\r?\ndata: (\S+)/.exec(created)![1]!;
    const h = { ...key, 'x-session-id': sid, 'content-type': 'application/json' };
    await counted(() => fetch(`${server.url}/create`, { method: 'POST', headers: h, body: JSON.stringify({ env_name: 'bench', split: 'train', index: 0 }) }));
    const call = (input: object) => counted(() => fetch(`${server.url}/bench/call`, { method: 'POST', headers: { ...h, accept: 'text/event-stream' }, body: JSON.stringify(input) }));
    const end = (text: string) => JSON.parse(/event: end\r?\ndata: (.*)/.exec(text)![1]!) as { ok: boolean; error?: string; output?: { reward: number | null } };
    expect(end((await call({ name: 'submit', input: { answer: 42 } })).text)).toMatchObject({ ok: false });
    expect(end((await call({ name: 'submit', input: { answer: '41' } })).text)).toMatchObject({ ok: true, output: { reward: 0 } });
  });
});
