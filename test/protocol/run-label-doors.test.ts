// A run label through every door whose client sends none of our headers (src/protocol/run-label.ts): the
// reward door (x-rft-run, or ?run= on the URL slime and OpenRLHF take), OpenEnv (the URL's ?run=, a reset's
// `run` since OpenEnv's Python client sends no header and appends /ws to its base URL, an HTTP step's
// header, query or body), ORS's /create (header, body or task_spec) and SandboxFusion's /run_code (header
// or query). Each rollout is recorded with its run, and the dashboard's run filter (GET /v1/rollouts?run=,
// GET /v1/stats?run=) finds it; a malformed label is the coded 400, nothing recorded.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import WebSocket from 'ws';
import { repoRoot, startTestServer, type TestServer } from '../helpers/server.js';
import { EnvClient, ServerError } from '../helpers/openenv-client.js';
import { OrsClient } from '../helpers/ors-client.js';
import { firstRunLabel, runOfUrl } from '../../src/protocol/run-label.js';

type Row = Record<string, unknown>;
const train = readFileSync(join(repoRoot, 'examples/finqa/train.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Row);
const fieldsOf = ({ messages: _m, tools: _t, ...fields }: Row): Row => fields;

describe('run-label helpers', () => {
  it('take the first place that gives a label, and refuse a malformed one wherever it is', () => {
    expect(firstRunLabel([undefined, 'a'], ['q', 'b'], ['r', 'c'])).toBe('q');
    expect(firstRunLabel([undefined, 'a'])).toBeUndefined();
    expect(() => firstRunLabel(['ok', 'a'], [' bad', 'body run'])).toThrow(expect.objectContaining({ code: 'RFT_ERR_BAD_RUN_LABEL' }));
    expect(runOfUrl('/finqa/ws?run=exp%201')).toBe('exp 1');
    expect(runOfUrl('/finqa/ws')).toBeUndefined();
    expect(() => runOfUrl('/finqa/ws?run=a&run=b')).toThrow(/more than once/);
    expect(() => runOfUrl('/finqa/ws?run=')).toThrow(/empty/);
  });
});

describe('a run label through the doors without our headers', () => {
  let server: TestServer;
  let priv: string;
  beforeAll(async () => {
    server = await startTestServer({ env: { RFT_PRIVATE_PORT: '0', RFT_SQLITE_SYNC: 'normal', RFT_SANDBOX: 'process' } });
    priv = server.app.rft.privateDoors!.url;
  }, 120_000);
  afterAll(() => server?.close());

  const authed = async <T>(path: string): Promise<T> => {
    const res = await fetch(`${server.url}${path}`, { headers: { authorization: `Bearer ${server.key}` } });
    expect(res.status).toBe(200);
    return (await res.json()) as T;
  };
  /** What the dashboard's run filter lists: the rollouts of run `run` (and of door `door`). */
  const listed = async (run: string, door: string) =>
    (await authed<{ rollouts: { trace_id: string; run: string | null; door: string }[] }>(`/v1/rollouts?run=${encodeURIComponent(run)}&door=${door}&limit=100`)).rollouts;
  const runOf = async (traceId: string) => (await authed<{ run: string | null }>(`/v1/rollouts/${traceId}`)).run;
  const reward = (path: string, headers: Record<string, string> = {}) =>
    fetch(`${priv}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify({ prompt: 'q', response: `Answer: ${String(train[0]!.reference_answer)}`, label: JSON.stringify(fieldsOf(train[0]!)) }),
    });

  it('the reward door records ?run= and x-rft-run, and the dashboard lists the grade under its run', async () => {
    const byQuery = await reward('/reward/answer_match?run=slime-query');
    expect(byQuery.status).toBe(200);
    const score = (await byQuery.json()) as number;
    const rows = await listed('slime-query', 'reward');
    expect(rows).toHaveLength(1);
    expect(rows[0]!.run).toBe('slime-query');
    expect(typeof score).toBe('number');
    // The dashboard's figures for that run count the grade.
    const stats = await authed<{ totals: { rollouts_started: number; rollouts_graded: number } }>('/v1/stats?run=slime-query');
    expect(stats.totals).toMatchObject({ rollouts_started: 1, rollouts_graded: 1 });

    expect((await reward('/reward/answer_match', { 'x-rft-run': 'slime-header' })).status).toBe(200);
    expect(await listed('slime-header', 'reward')).toHaveLength(1);
    // The header before the URL.
    expect((await reward('/reward?run=loser', { 'x-rft-run': 'winner' })).status).toBe(200);
    expect(await listed('winner', 'reward')).toHaveLength(1);
    expect(await listed('loser', 'reward')).toHaveLength(0);
  });

  it('the reward door refuses a malformed label before grading anything', async () => {
    const before = (await authed<{ rollouts: unknown[] }>('/v1/rollouts?door=reward&limit=100')).rollouts.length;
    for (const path of ['/reward/answer_match?run=', '/reward/answer_match?run=a&run=b', `/reward/answer_match?run=${'x'.repeat(65)}`]) {
      const res = await reward(path);
      expect(res.status).toBe(400);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('RFT_ERR_BAD_RUN_LABEL');
    }
    expect((await authed<{ rollouts: unknown[] }>('/v1/rollouts?door=reward&limit=100')).rollouts.length).toBe(before);
  });

  it("OpenEnv: a reset's `run` (OpenEnv's client's way), the socket URL's ?run=, an HTTP step's header, query or body", async () => {
    const env = await new EnvClient(`${priv}/finqa`).connect();
    try {
      await env.reset({ split: 'train', index: 0, run: 'trl-reset' });
      const first = (await env.state()).trace_id as string;
      await env.reset({ split: 'train', index: 1 });
      const second = (await env.state()).trace_id as string;
      expect(await runOf(first)).toBe('trl-reset');
      expect(await runOf(second)).toBeNull();
      await expect(env.reset({ index: 0, run: 7 })).rejects.toThrow(ServerError);
    } finally {
      await env.close();
    }

    // A client that builds its WebSocket URL: ws://host/finqa/ws?run=x labels every episode of the socket.
    const ws = new WebSocket(`${priv.replace('http://', 'ws://')}/finqa/ws?run=ws-url`);
    await new Promise((resolve, reject) => (ws.once('open', resolve), ws.once('error', reject)));
    const next = () => new Promise<Record<string, unknown>>((resolve) => ws.once('message', (d: Buffer) => resolve(JSON.parse(d.toString()) as Record<string, unknown>)));
    const traces: string[] = [];
    // The URL's label before a reset's own.
    for (const data of [{ index: 2 }, { index: 3, run: 'after-the-url' }]) {
      ws.send(JSON.stringify({ type: 'reset', data }));
      expect((await next()).type).toBe('observation');
      ws.send(JSON.stringify({ type: 'state' }));
      traces.push(((await next()).data as { trace_id: string }).trace_id);
    }
    ws.close();
    for (const t of traces) expect(await runOf(t)).toBe('ws-url');
    expect((await listed('ws-url', 'openenv')).map((r) => r.trace_id).sort()).toEqual([...traces].sort());
    expect(await listed('after-the-url', 'openenv')).toHaveLength(0);

    const bad = await new Promise<number>((resolve, reject) => {
      const w = new WebSocket(`${priv.replace('http://', 'ws://')}/finqa/ws?run=`);
      w.once('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
      w.once('open', () => reject(new Error('opened')));
    });
    expect(bad).toBe(400);

    const step = (path: string, body: Row, headers: Record<string, string> = {}) =>
      fetch(`${priv}/finqa${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ action: { type: 'call_tool', tool_name: 'list_docs', arguments: {} }, index: 0, ...body }) });
    expect((await step('/step', {}, { 'x-rft-run': 'http-header' })).status).toBe(200);
    expect((await step('/step?run=http-query', {})).status).toBe(200);
    expect((await step('/step', { run: 'http-body' })).status).toBe(200);
    for (const run of ['http-header', 'http-query', 'http-body']) expect(await listed(run, 'openenv')).toHaveLength(1);
    const refused = await step('/step', { run: '' });
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('RFT_ERR_BAD_RUN_LABEL');
  });

  it("ORS: /create's x-rft-run, body `run` or task_spec's `run` labels the session's rollout", async () => {
    const ors = new OrsClient(server.url, { token: server.key });
    await ors.session('finqa', { task_spec: { split: 'train', index: 0, run: 'ors-spec' } }, async (s) => {
      await s.getPrompt();
    });
    expect(await listed('ors-spec', 'ors')).toHaveLength(1);
    const create = async (body: Row, headers: Record<string, string> = {}) => {
      const res = await fetch(`${server.url}/create_session`, { method: 'POST', headers: { 'x-api-key': server.key, 'content-type': 'application/json' }, body: '{}' });
      const sid = /"sid":\s*"([^"]+)"/.exec(await res.text())![1]!;
      return fetch(`${server.url}/create`, { method: 'POST', headers: { 'x-api-key': server.key, 'x-session-id': sid, 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
    };
    expect((await create({ split: 'train', index: 1, env_name: 'finqa', run: 'ors-body' })).status).toBe(200);
    expect((await create({ split: 'train', index: 1, env_name: 'finqa' }, { 'x-rft-run': 'ors-header' })).status).toBe(200);
    for (const run of ['ors-body', 'ors-header']) expect(await listed(run, 'ors')).toHaveLength(1);
    expect((await create({ split: 'train', index: 1, env_name: 'finqa', run: ' x' })).status).toBe(400);
  });

  it('SandboxFusion: /run_code?run= and x-rft-run label the run', async () => {
    const run = (path: string, headers: Record<string, string> = {}) =>
      fetch(`${priv}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ language: 'python', code: 'print(1)', run_timeout: 10 }) });
    expect((await run('/run_code?run=verl-query')).status).toBe(200);
    expect((await run('/run_code', { 'x-rft-run': 'verl-header' })).status).toBe(200);
    for (const label of ['verl-query', 'verl-header']) expect(await listed(label, 'sandbox-fusion')).toHaveLength(1);
    expect((await run('/run_code?run=')).status).toBe(400);
  }, 120_000);
});
