// Server replicas (real `serve` processes) on one Postgres schema and two Docker engines (the extra
// engines of .ci/setup-engines.sh, one over TLS), with no routing by rollout: a rollout's calls land
// on any replica and use one sandbox, its grade on a third replica sees that workspace, serial calls
// never overlap across replicas, the budget holds, and a replica killed mid-run loses no acknowledged
// call and leaves no container once it is back and the TTL has passed.
import { readFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { request } from 'undici';
import { afterAll, expect, it, vi } from 'vitest';
import { DockerApi } from '../../src/sandbox/drivers/docker/api.js';
import { endpointFor } from '../../src/sandbox/drivers/docker/hosts.js';
import { EXTRA_ENGINE_HOSTS, extraEngines, extraEnginesMissing } from '../helpers/extra-engines.js';
import { spawnServer, type ChildServer } from '../helpers/child-server.js';
import { functionCall, newTrace } from '../helpers/fixtures.js';
import { describeIf } from '../helpers/require.js';
import { repoRoot } from '../helpers/server.js';
import { databaseUrl, dropSchema, postgresUnavailable, randomSchema } from '../store/postgres-db.js';

const KEY = 'replicas-test-key-0123456789abcdef';
const HOSTS = EXTRA_ENGINE_HOSTS;
const engines = extraEngines;

const unavailable = (await postgresUnavailable()) ?? (await extraEnginesMissing());
const schema = randomSchema();
const started: ChildServer[] = [];
const row = JSON.parse(readFileSync(join(repoRoot, 'examples/coding/train.jsonl'), 'utf8').split('\n')[0]!) as Record<string, unknown> & { task_id: string };
const solution = readFileSync(join(repoRoot, 'examples/coding/tasks', row.task_id, 'solution.patch'), 'utf8');
const item = { ...row, messages: undefined, tools: undefined };

/** Replica ids of this run only: a replica reaps the containers labelled with its id, and other runs share these engines. */
const owner = (id: string) => `${id}-${schema}`;

async function replica(id: string, extra: Record<string, string> = {}): Promise<ChildServer> {
  const s = await spawnServer(
    {
      RFT_STORE: 'postgres', RFT_DATABASE_URL: databaseUrl, RFT_PG_SCHEMA: schema, RFT_INSTANCE_ID: owner(id),
      RFT_DATA_DIR: await mkdtemp(join(tmpdir(), `rft-replica-${id}-`)),
      RFT_API_KEYS: `t:${KEY}`, RFT_RATE_LIMIT: '0', RFT_SANDBOX: 'docker', RFT_DOCKER_HOSTS: HOSTS,
      RFT_TOOLS_DIR: join(repoRoot, 'tools'), RFT_GRADERS_DIR: join(repoRoot, 'graders'), RFT_SANDBOX_TEMPLATES: join(repoRoot, 'examples'),
      RFT_SANDBOX_GRACE_MS: '1000', ...extra,
    },
    120_000,
  );
  started.push(s);
  return s;
}

async function post(url: string, path: string, body: unknown): Promise<{ status: number; body: { output?: string; score?: number; metadata?: unknown; error?: { code: string } | undefined } }> {
  const res = await request(`${url}${path}`, { method: 'POST', headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.statusCode, body: (await res.body.json()) as never };
}

const call = (url: string, trace: string, name: string, args: unknown, callId?: string) =>
  post(url, '/tools', functionCall(name, args, { trace_id: trace, item, ...(callId ? { call_id: callId } : {}) }));

async function recorded(url: string, trace: string): Promise<{ call_id: string; status: string; output: string }[]> {
  const res = await request(`${url}/v1/rollouts/${trace}`, { headers: { authorization: `Bearer ${KEY}` } });
  return ((await res.body.json()) as { calls: { call_id: string; status: string; output: string }[] }).calls;
}

/** Containers on both engines carrying `label` (key=value). */
async function containers(label: string): Promise<string[]> {
  const out: string[] = [];
  for (const h of engines) {
    const api = new DockerApi(endpointFor(h));
    try {
      const filters = encodeURIComponent(JSON.stringify({ label: [label] }));
      out.push(...(await api.call<{ Names: string[] }[]>('GET', `/containers/json?all=true&filters=${filters}`)).body.map((c) => `${h.name}:${c.Names[0]}`));
    } finally {
      await api.close();
    }
  }
  return out;
}

async function placements(): Promise<number> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    return (await client.query(`SELECT count(*)::int AS n FROM "${schema}".sandboxes`)).rows[0].n as number;
  } finally {
    await client.end();
  }
}

describeIf(unavailable === undefined, 'Postgres and two extra Docker engines', unavailable ?? '')('replicas sharing one Postgres and two Docker engines', () => {
  afterAll(async () => {
    await Promise.all(started.map((s) => s.stop('SIGTERM')));
    await dropSchema(schema);
  });

  it('serves one rollout from alternating replicas in one workspace, and grades it on a third', { timeout: 300_000 }, async () => {
    const [a, b, c] = await Promise.all([replica('rep-a'), replica('rep-b'), replica('rep-c')]);
    const trace = newTrace();
    const steps: [ChildServer, string, unknown, (out: string) => void][] = [
      [a, 'shell', { command: 'echo from-a > note.txt && ls' }, (o) => expect(o).toContain('duration.js')],
      [b, 'read_file', { path: 'note.txt' }, (o) => expect(o).toContain('from-a')],
      [a, 'apply_patch', { patch: solution }, (o) => expect(o).not.toMatch(/^Error/)],
      [b, 'shell', { command: 'echo from-b >> note.txt && cat note.txt && git diff --stat 2>/dev/null | tail -1; node -e "console.log(require(\'./duration.js\').formatDuration(0))"' }, (o) => expect(o).toMatch(/from-a\s+from-b[\s\S]*0s/)],
    ];
    for (const [server, tool, args, check] of steps) {
      const r = await call(server.url, trace, tool, args);
      expect(r.status).toBe(200);
      check(r.body.output ?? '');
    }
    expect(await containers(`rft-endpoints.trace_id=${trace}`)).toHaveLength(1);
    const graded = await post(c.url, '/graders/unit_tests', { sample: { output_text: 'Fixed.', output_tools: [], choices: [] }, item, trace_id: trace });
    expect(graded.status).toBe(200);
    expect(graded.body.score).toBeGreaterThan(0.9);
    // The grade's grace period (1 s) ends with the rollout's sandbox removed, by the grading replica.
    await vi.waitFor(async () => expect(await containers(`rft-endpoints.trace_id=${trace}`)).toEqual([]), { timeout: 30_000, interval: 250 });
    await Promise.all([a.stop(), b.stop(), c.stop()]);
  });

  it('runs exactly 10 of 50 parallel serial calls split across two replicas on a budget of 10, one at a time', { timeout: 300_000 }, async () => {
    const [a, b] = await Promise.all([replica('rep-d'), replica('rep-e')]);
    const trace = newTrace();
    const limited = { ...item, tool_budget: 10 };
    // Overlapping calls would find the lock directory taken.
    const cmd = 'mkdir lock 2>/dev/null || echo OVERLAP >> runs; sleep 0.05; echo run >> runs; rmdir lock; wc -l < runs';
    const replies = await Promise.all(
      Array.from({ length: 50 }, (_, i) => post((i % 2 ? a : b).url, '/tools', functionCall('shell', { command: cmd }, { trace_id: trace, item: limited }))),
    );
    expect(replies.map((r) => r.status)).toEqual(Array(50).fill(200));
    const ran = replies.filter((r) => !/budget/i.test(r.body.output ?? ''));
    expect(ran).toHaveLength(10);
    const rec = await recorded(b.url, trace);
    expect(rec.filter((x) => x.status === 'ok')).toHaveLength(10);
    expect(rec.filter((x) => x.status === 'budget_exceeded')).toHaveLength(40);
    // Each call saw the runs before it and no overlap: the counts are 1..10 exactly once each.
    const counts = ran.map((r) => Number(/(\d+)\s*$/.exec(r.body.output ?? '')?.[1])).sort((x, y) => x - y);
    expect(counts).toEqual(Array.from({ length: 10 }, (_, i) => i + 1));
    expect(ran.some((r) => (r.body.output ?? '').includes('OVERLAP'))).toBe(false);
    await Promise.all([a.stop(), b.stop()]);
  });

  it('loses no acknowledged call when a replica is killed mid-run, never shows or charges a cut call, and leaves no container after its restart and the TTL', { timeout: 600_000 }, async () => {
    const ttl = { RFT_SANDBOX_TTL_MS: '15000' };
    let a = await replica('rep-f', ttl);
    const b = await replica('rep-g', ttl);
    const rollouts = Array.from({ length: 6 }, () => newTrace());
    const acknowledged = new Map<string, { trace: string; output: string }>();
    /** Rollouts the trainer dropped: a call answered 5xx on its first try and its 3 retries, with the codes. */
    const dropped = new Map<string, { callId: string; codes: (string | undefined)[] }>();
    let aDead = false;
    // The trainer's side: each rollout makes 6 calls in turn, alternating replicas; a call whose
    // replica is gone is retried (same call id) on the other one, as a load balancer would; a call
    // answered 5xx is retried at most 3 times, then the rollout is dropped (wire contract).
    const logs = new Map<string, string>();
    const run = async (trace: string, r: number): Promise<void> => {
      for (let i = 0; i <= 6; i++) {
        const callId = `call_${r}_${i}`;
        // The last call reads the log back: the rollout's workspace, whichever replica made it.
        const args = { command: i < 6 ? `echo ${callId} >> log; wc -l < log` : 'cat log' };
        let target = (i + r) % 2 ? a : b;
        const codes: (string | undefined)[] = [];
        for (;;) {
          if (target === a && aDead) target = b;
          const reply = await call(target.url, trace, 'shell', args, callId).catch(() => null);
          if (reply && reply.status === 200) {
            if (i < 6) acknowledged.set(callId, { trace, output: reply.body.output ?? '' });
            else logs.set(trace, reply.body.output ?? '');
            break;
          }
          if (reply && reply.status >= 500) codes.push(reply.body.error?.code);
          if (codes.length > 3) {
            dropped.set(trace, { callId, codes });
            return;
          }
          target = target === a ? b : a;
          await new Promise((res) => setTimeout(res, 100));
        }
      }
    };
    const running = rollouts.map((t, r) => run(t, r));
    await vi.waitFor(() => expect(acknowledged.size).toBeGreaterThanOrEqual(8), { timeout: 120_000, interval: 50 });
    // One call certainly running on the replica when it dies.
    const cutTrace = newTrace();
    const cutArgs = { command: 'echo started >> marker; sleep 30' };
    const cutReply = call(a.url, cutTrace, 'shell', cutArgs, 'call_cut').catch(() => null);
    await vi.waitFor(async () => expect((await recorded(b.url, cutTrace)).find((x) => x.call_id === 'call_cut')?.status).toBe('running'), { timeout: 60_000, interval: 50 });
    aDead = true;
    await a.stop('SIGKILL');
    expect(await cutReply).toBeNull();
    // The trainer's first try and 3 retries of the cut call, on the live replica: each a retryable 5xx, never an output.
    for (let attempt = 0; attempt < 4; attempt++) {
      const retry = await call(b.url, cutTrace, 'shell', cutArgs, 'call_cut');
      expect({ status: retry.status, code: retry.body.error?.code }).toEqual({ status: 503, code: 'RFT_ERR_CALL_INTERRUPTED' });
    }
    a = await replica('rep-f', ttl); // back under the same id: its running calls become interrupted
    aDead = false;
    await Promise.all(running);
    const cutRecord = await request(`${a.url}/v1/rollouts/${cutTrace}`, { headers: { authorization: `Bearer ${KEY}` } });
    expect(await cutRecord.body.json()).toMatchObject({ budget: { used: 0 }, calls: [{ call_id: 'call_cut', status: 'interrupted' }] });

    for (const [callId, { trace, output }] of acknowledged) {
      const rec = (await recorded(b.url, trace)).find((x) => x.call_id === callId);
      expect(rec, callId).toBeDefined();
      expect(rec!.output).toBe(output);
    }
    for (const trace of rollouts) {
      const res = await request(`${a.url}/v1/rollouts/${trace}`, { headers: { authorization: `Bearer ${KEY}` } });
      const rec = (await res.body.json()) as { budget: { used: number }; calls: { call_id: string; status: string; output: string }[] };
      const ok = rec.calls.filter((x) => x.status === 'ok');
      // A cut call is never charged: the budget holds the calls that ran and answered.
      expect(rec.budget.used, trace).toBe(ok.length);
      const drop = dropped.get(trace);
      if (drop) {
        // Only a call the kill cut drops a rollout, by its retries' 503 RFT_ERR_CALL_INTERRUPTED, never an output.
        expect(drop.codes).toEqual(Array(4).fill('RFT_ERR_CALL_INTERRUPTED'));
        expect(rec.calls.find((x) => x.call_id === drop.callId)?.status).toBe('interrupted');
        continue;
      }
      // Every other rollout kept its one workspace through the kill: its log holds each of its 6 calls.
      expect(ok.filter((x) => x.call_id !== `call_${rollouts.indexOf(trace)}_6`)).toHaveLength(6);
      for (const x of ok) if (!x.call_id.endsWith('_6')) expect(logs.get(trace)).toContain(x.call_id);
    }
    // Idle past the TTL: every rollout's sandbox of both replicas is gone, and so are their records. What is
    // left is each replica's warm pool (started containers for the next step, never a rollout's: the pool
    // learned this run's bursts and keeps them until its idle timeout), as many as the replicas report.
    const poolWarm = async (url: string): Promise<number> => {
      const res = await request(`${url}/v1/stats?since=15m&include=rollouts`, { headers: { authorization: `Bearer ${KEY}` } });
      const body = (await res.body.json()) as { this_replica: { sandboxes?: { pool?: { warm: number } | null } } };
      return body.this_replica.sandboxes?.pool?.warm ?? 0;
    };
    await vi.waitFor(
      async () => {
        const left = [...(await containers(`rft-endpoints.instance=${owner('rep-f')}`)), ...(await containers(`rft-endpoints.instance=${owner('rep-g')}`))];
        expect(left).toHaveLength((await poolWarm(a.url)) + (await poolWarm(b.url)));
        expect(await placements()).toBe(0);
      },
      { timeout: 60_000, interval: 500 },
    );
  });
});
