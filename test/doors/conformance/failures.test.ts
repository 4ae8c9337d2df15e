// Conformance (issue 37): every failure injection through every door. For each door x case the
// reply is the one that door's trainer client needs (doors.ts reads it as the client does: a failure
// of ours must be the client's retry or rerun signal, never an output the model reads or a reward it
// is trained on), the server is still alive (/healthz), and the record is consistent (no call recorded
// for a failure of ours, nothing charged). A door without a row for a case fails the suite; a door that
// has no such path says so in its row (`na`).
// One Postgres-backed server (behind a loopback proxy that takes the store down) with the bubblewrap
// driver serves the store, sandbox and slow-start cases; a SQLite one with a throwing default grader
// the grader cases; a child server the kill -9 cases.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { describeIf } from '../../helpers/require.js';
import { repoRoot, startTestServer, type TestServer } from '../../helpers/server.js';
import { fixtureGraders, fixtureTools } from '../../helpers/fixtures.js';
import { gate, spawnServer, type ChildServer } from '../../helpers/child-server.js';
import { waitFor } from '../../helpers/wait.js';
import { writeMcpJson } from '../../mcp/helpers.js';
import { dropSchema, postgresUnavailable, randomSchema } from '../../store/postgres-db.js';
import { startPgProxy, type PgProxy } from '../../store/postgres-proxy.js';
import { driversPresent } from '../../sandbox/helpers.js';
import { DOORS, type Door, type Endpoints, type Episode, type Reply } from './doors.js';

const KILL = 'kill -9 mid-call, then restart';
const CASES = ['store down mid-episode', 'sandbox lost mid-call', 'grader failure', 'slow tool start', KILL] as const;
type Case = (typeof CASES)[number];
type DoorName = Door['name'];

/** A row: the test of that door and case, a path the door does not have, or a known defect left open. */
type Row = { run: (door: Door) => Promise<void> } | { na: string } | { todo: string };
const na = (why: string): Row => ({ na: why });

const pg = await postgresUnavailable();
const present = await driversPresent();
const FIXTURES = join(repoRoot, 'test/mcp/fixtures');

// ---- the servers -------------------------------------------------------------------------------

/** An environment dir whose `conf` environment offers `tools` and grades with `grader`: one task. */
function environments(tools: string[], grader: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'rft-conformance-env-'));
  const env = join(dir, 'conf');
  mkdirSync(env);
  writeFileSync(join(env, 'job.json'), JSON.stringify({ method: { reinforcement: { tools: tools.map((name) => ({ name })), grader: { name: grader } } } }));
  // OpenEnv offers the row's tools (Chat Completions format), ORS and the others the job's.
  const rowTools = tools.map((name) => ({ type: 'function', function: { name, description: name, parameters: { type: 'object', properties: {} } } }));
  writeFileSync(join(env, 'train.jsonl'), `${JSON.stringify({ messages: [{ role: 'user', content: 'q' }], tools: rowTools, reference_answer: '42' })}\n`);
  return dir;
}

const TOOLS = ['shell', 'stuck_echo'];
let proxy: PgProxy;
let main: TestServer;
let mainDoors: Endpoints;
const schema = randomSchema();
const envDirs: string[] = [];

async function rollout(url: string, key: string, traceId: string): Promise<{ status: number; calls: { call_id: string; status: string; output: string | null }[]; budget?: { used: number }; grades?: { score: number | null; status?: string }[] }> {
  const res = await request(`${url}/v1/rollouts/${traceId}`, { headers: { authorization: `Bearer ${key}` } });
  const body = (await res.body.json()) as { calls?: never[]; budget?: { used: number }; grades?: never[] };
  return { status: res.statusCode, calls: body.calls ?? [], ...(body.budget ? { budget: body.budget } : {}), ...(body.grades ? { grades: body.grades } : {}) };
}

async function alive(url: string): Promise<void> {
  const res = await request(`${url}/healthz`);
  await res.body.dump();
  expect(res.statusCode).toBe(200);
}

/** The door still serves a fresh episode: a tool call answers an output (the reward door: a grade a reward). */
async function serves(door: Door, e: Endpoints, tool: string, args: Record<string, unknown>): Promise<void> {
  const ep = await door.open(e);
  try {
    const r = door.name === 'reward' ? await ep.submit('42') : await ep.call(door.name === 'SandboxFusion' ? 'run_code' : tool, door.name === 'SandboxFusion' ? { code: 'print(1)' } : args);
    expect(r, JSON.stringify(r)).toMatchObject({ kind: door.name === 'reward' ? 'reward' : 'output' });
    if (r.kind === 'output') expect(r.isError, r.detail).toBe(false);
  } finally {
    await ep.end();
  }
}
const servesMain = (door: Door) => serves(door, mainDoors, 'shell', { command: 'echo fine' });

/** The rft-supervisor processes (the bwrap driver's) that are children of this process. */
function supervisors(): number[] {
  const out: number[] = [];
  for (const p of readdirSync('/proc')) {
    if (!/^\d+$/.test(p)) continue;
    try {
      const cmd = readFileSync(`/proc/${p}/cmdline`, 'utf8');
      const stat = readFileSync(`/proc/${p}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
      if (cmd.split('\0')[0] === 'rft-supervisor' && stat[0] !== 'Z' && Number(stat[1]) === process.pid) out.push(Number(p));
    } catch {
      // gone
    }
  }
  return out;
}

/** Whether a live descendant of `root` has `marker` in its command line. */
function runsUnder(root: number, marker: string): boolean {
  const parent = new Map<number, number>();
  const cmd = new Map<number, string>();
  for (const p of readdirSync('/proc')) {
    if (!/^\d+$/.test(p)) continue;
    try {
      parent.set(Number(p), Number(readFileSync(`/proc/${p}/stat`, 'utf8').split(') ')[1]?.split(' ')[1]));
      cmd.set(Number(p), readFileSync(`/proc/${p}/cmdline`, 'utf8'));
    } catch {
      // gone
    }
  }
  for (const [pid, line] of cmd) {
    if (!line.includes(marker)) continue;
    for (let p: number | undefined = pid; p !== undefined && p > 1; p = parent.get(p)) if (p === root) return true;
  }
  return false;
}

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  const port = (s.address() as { port: number }).port;
  await new Promise((r) => s.close(r));
  return port;
}

/** Expects `r` to be the door's retry signal, with `code` when the door carries one. */
function expectRetry(r: Reply, code: string | RegExp | undefined): void {
  expect(r.kind, r.kind === 'transport' ? r.detail : JSON.stringify(r)).toBe('retry');
  if (code !== undefined && r.kind === 'retry') expect(r.code, r.detail).toMatch(code);
}

async function episode(door: Door, e: Endpoints): Promise<Episode> {
  return door.open(e);
}

// ---- the cases -----------------------------------------------------------------------------------

/** The store goes down between two calls of an episode: the second is the retry signal, not recorded, not charged. */
const storeDown = (code: string | RegExp | undefined, graded: boolean, tool = 'shell', args: Record<string, unknown> = { command: 'echo up' }): Row => ({
  async run(door) {
    const ep = await episode(door, mainDoors);
    try {
      const first = await ep.call(tool, args, 'call_before');
      expect(first.kind, first.detail).toBe('output');
      await proxy.down();
      let during: Reply;
      let grade: Reply | undefined;
      try {
        during = await ep.call(tool, { ...args, command: 'echo during' }, 'call_during');
        // the answer submitted while the store is down: never a reward, never a 0 the model is trained on
        if (graded) grade = await ep.submit('42');
        await alive(main.url);
      } finally {
        await proxy.up();
      }
      expectRetry(during, code);
      if (grade) expectRetry(grade, undefined);
      await waitFor('the store back', async () => ((await request(`${main.url}/readyz`)).statusCode === 200 ? true : undefined), 30_000, 100);
      await servesMain(door);
      if (ep.traceId) {
        const rec = await rollout(main.url, main.key, ep.traceId);
        expect(rec.calls.map((c) => c.status)).toEqual(['ok']);
        expect(rec.budget?.used).toBe(1);
        expect((rec.grades ?? []).filter((g) => g.score !== null)).toEqual([]);
      }
    } finally {
      await ep.end();
    }
  },
});

/** A store-down on a grade: the reward door has no tool call, its grade is what it records. */
const storeDownGrade: Row = {
  async run(door) {
    const ep = await episode(door, mainDoors);
    await proxy.down();
    let r: Reply;
    try {
      r = await ep.submit('42');
      await alive(main.url);
    } finally {
      await proxy.up();
    }
    expectRetry(r, undefined);
    await servesMain(door);
  },
};

/** The grade of an episode that a failure of ours broke, on the doors whose clients cannot retry one call. */
const LOST = { nemoGym: 'RFT_ERR_NEMO_GYM_ROLLOUT_LOST', openEnv: 'RFT_ERR_OPENENV_ROLLOUT_LOST' };

/**
 * The rollout's bwrap supervisor is killed from outside while a command runs in it (3 s, then `done`).
 * `rerun`: the door's client retries on its own (ORS reconnects with the task_id, verl retries a 504),
 * so what it ends with is the rerun's output; else it ends with the retry signal.
 */
const sandboxLost = (code: string | RegExp | undefined, o: { perRun?: boolean; rerun?: boolean; lost?: string } = {}): Row => ({
  async run(door) {
    const ep = await episode(door, mainDoors);
    try {
      if (!o.perRun) expect((await ep.call('shell', { command: 'echo up' }, 'call_up')).kind).toBe('output');
      const call = o.perRun ? ep.call('run_code', { code: 'import time\ntime.sleep(3)\nprint("done")' }) : ep.call('shell', { command: 'sleep 3; echo done' }, 'call_lost');
      // bwrap's supervisor may hold several sandboxes: the one whose descendant runs the command.
      const mine = await waitFor('the command running in its sandbox', () => supervisors().find((p) => runsUnder(p, o.perRun ? 'python' : 'sleep 3')), 30_000, 50);
      process.kill(mine, 'SIGKILL');
      const r = await call;
      if (o.rerun) expect(r, JSON.stringify(r)).toMatchObject({ kind: 'output', isError: false, text: expect.stringContaining('done') as string });
      else expectRetry(r, code);
      if (o.lost) expectRetry(await ep.submit('42'), o.lost);
      if (o.perRun) expect(r.detail, 'a 504 first, then the retry\'s reply').toMatch(/^504,200 /);
      await alive(main.url);
      await servesMain(door);
      if (ep.traceId) {
        const rec = await rollout(main.url, main.key, ep.traceId);
        // the lost run is not recorded nor charged; a rerun is, once
        expect(rec.calls.map((c) => c.status)).toEqual(o.rerun ? ['ok', 'ok'] : ['ok']);
        expect(rec.budget?.used).toBe(o.rerun ? 2 : 1);
      }
    } finally {
      await ep.end();
    }
  },
});

/** A bridged MCP server that never finishes starting: past RFT_MCP_START_TIMEOUT_MS, the retry signal. */
const slowStart = (code: string | RegExp | undefined, lost?: string): Row => ({
  async run(door) {
    const ep = await episode(door, mainDoors);
    try {
      expectRetry(await ep.call('stuck_echo', { message: 'hello' }, 'call_slow'), code);
      // a door whose client cannot retry one call marks the episode lost: its grade is the rerun signal
      if (lost) expectRetry(await ep.submit('42'), lost);
      await alive(main.url);
      await servesMain(door);
      if (ep.traceId) {
        const rec = await rollout(main.url, main.key, ep.traceId);
        expect(rec.calls).toEqual([]);
        expect(rec.budget?.used ?? 0).toBe(0);
      }
    } finally {
      await ep.end();
    }
  },
});

let graders: TestServer;
let graderDoors: Endpoints;
/** The grader throws: `expect` is the reply the door's client needs. */
const graderFailure = (check: (r: Reply) => void): Row => ({
  async run(door) {
    const ep = await episode(door, graderDoors);
    try {
      const r = await ep.submit('42');
      check(r);
      await alive(graders.url);
      if (ep.traceId) {
        const rec = await rollout(graders.url, graders.key, ep.traceId);
        // never a score for a grade that did not happen
        expect((rec.grades ?? []).filter((g) => g.score !== null)).toEqual([]);
      }
    } finally {
      await ep.end();
    }
  },
});

let child: ChildServer;
let childEnv: Record<string, string>;
let childDoors: Endpoints;
const KEY = 'conformance-kill-key-0123456789';
/** Each door's episode whose call the one kill cut: its episode, the gate its call waits on, the reply it got. */
const cutCalls = new Map<DoorName, { ep: Episode; gate: string; seen: Reply }>();

/**
 * The server is killed (-9) while a call of every door runs (one kill for all, in the group's
 * beforeAll), then restarted on the same data: each client got the reply `cut` (no reply at all, or
 * its own retries' end); after the restart the call is `interrupted` in the record, uncharged, and
 * the client's own next try (`retried`, when its client makes one) is the retry signal.
 */
const killed = (cut: Reply['kind'], retried: ((ep: Episode, gatePath: string) => Promise<Reply>) | undefined, code?: string | RegExp | ((r: Reply) => void)): Row => ({
  async run(door) {
    const { ep, gate: never, seen } = cutCalls.get(door.name)!;
    expect(seen.kind, seen.detail).toBe(cut);
    await alive(child.url);
    // every listener back on its port: the door serves a fresh episode
    await serves(door, childDoors, 'echo', { text: 'fine' });
    const rec = await rollout(child.url, KEY, ep.traceId!);
    expect(rec.calls.map((c) => c.status)).toEqual(['interrupted']);
    expect(rec.budget?.used ?? 0).toBe(0);
    if (retried) {
      const r = await retried(ep, never);
      if (typeof code === 'function') code(r);
      else expectRetry(r, code);
    }
    await ep.end().catch(() => undefined);
  },
});

/** The kill: every door with a kill row starts a call that waits, then the server is killed and restarted. */
async function killMidCalls(): Promise<void> {
  const pending = new Map<DoorName, { ep: Episode; gate: string; call: Promise<Reply> }>();
  for (const door of DOORS) {
    if (!('run' in TABLE[door.name][KILL])) continue;
    const ep = await episode(door, childDoors);
    const never = gate().path;
    pending.set(door.name, { ep, gate: never, call: ep.call('echo', { text: 'cut', wait_for: never }, 'call_cut') });
  }
  for (const [name, { ep }] of pending) {
    await waitFor(`the ${name} call running`, async () => ((await rollout(childDoors.main, KEY, ep.traceId!)).calls.some((c) => c.status === 'running') ? true : undefined), 20_000, 50);
  }
  await child.stop('SIGKILL');
  for (const [name, p] of pending) cutCalls.set(name, { ep: p.ep, gate: p.gate, seen: await p.call });
  child = await spawnServer(childEnv);
}

// ---- the table -------------------------------------------------------------------------------------

const NO_TOOLS = 'not applicable: the reward door grades an answer, it has no tool call';
const NO_GRADE_MCP = 'not applicable: the MCP door serves tools only; its rollout is graded through /grade (the Agent RFT row)';
const NO_GRADE_SF = 'not applicable: SandboxFusion runs code and verl scores on its side; the door has no grader';
const NO_BRIDGE_SF = 'not applicable: SandboxFusion runs code in its own sandbox, never a bridged MCP tool';

const TABLE: Record<DoorName, Record<Case, Row>> = {
  'Agent RFT': {
    'store down mid-episode': storeDown('RFT_ERR_STORE', true),
    'sandbox lost mid-call': sandboxLost(/^RFT_ERR_SANDBOX_(LOST|INTERRUPTED)$/),
    'grader failure': graderFailure((r) => expectRetry(r, 'RFT_ERR_GRADER_FAILED')),
    'slow tool start': slowStart('RFT_ERR_TOOL_START_TIMEOUT'),
    'kill -9 mid-call, then restart': killed('transport', (ep, g) => ep.call('echo', { text: 'cut', wait_for: g }, 'call_cut'), 'RFT_ERR_CALL_INTERRUPTED'),
  },
  MCP: {
    'store down mid-episode': storeDown('RFT_ERR_STORE', false),
    'sandbox lost mid-call': sandboxLost(/^RFT_ERR_SANDBOX_(LOST|INTERRUPTED)$/),
    'grader failure': na(NO_GRADE_MCP),
    'slow tool start': slowStart('RFT_ERR_TOOL_START_TIMEOUT'),
    'kill -9 mid-call, then restart': killed('transport', (ep, g) => ep.call('echo', { text: 'cut', wait_for: g }, 'call_cut'), 'RFT_ERR_CALL_INTERRUPTED'),
  },
  'NeMo Gym': {
    'store down mid-episode': storeDown('RFT_ERR_STORE', true),
    'sandbox lost mid-call': sandboxLost(/^RFT_ERR_SANDBOX_(LOST|INTERRUPTED)$/, { lost: LOST.nemoGym }),
    // Gym's own judges' convention: 200, reward 0, judge_failed (collection files it apart).
    'grader failure': graderFailure((r) => expect(r).toMatchObject({ kind: 'reward', reward: 0, failureClass: 'judge_failed' })),
    'slow tool start': slowStart('RFT_ERR_TOOL_START_TIMEOUT', LOST.nemoGym),
    // server_utils.py retries a transport error forever with the same bytes: that retry meets the restarted server.
    'kill -9 mid-call, then restart': killed('transport', (ep, g) => ep.call('echo', { text: 'cut', wait_for: g }, 'call_cut')),
  },
  ORS: {
    'store down mid-episode': storeDown(undefined, true),
    'sandbox lost mid-call': sandboxLost(undefined, { rerun: true }),
    'grader failure': graderFailure((r) => expectRetry(r, undefined)),
    'slow tool start': slowStart(undefined),
    // the SDK reconnects a broken /call stream with its task_id, 5 times, while the server is down: then gives
    // up; the session is the store's, so its next call after the restart is served in the same episode, unless
    // a ping of the SDK failed in the kill's window: then the SDK itself ended the session and sends nothing more.
    'kill -9 mid-call, then restart': killed('retry', (ep) => ep.call('echo', { text: 'again' }), (r) => {
      if (r.kind === 'retry' && r.detail.startsWith('Session terminated')) return;
      expect(r).toMatchObject({ kind: 'output', text: 'again', isError: false });
    }),
  },
  OpenEnv: {
    'store down mid-episode': storeDown('RFT_ERR_STORE', true),
    'sandbox lost mid-call': sandboxLost(/^RFT_ERR_SANDBOX_(LOST|INTERRUPTED)$/, { lost: LOST.openEnv }),
    'grader failure': graderFailure((r) => expectRetry(r, undefined)),
    'slow tool start': slowStart('RFT_ERR_TOOL_START_TIMEOUT', LOST.openEnv),
    // EnvClient neither reconnects nor resends: the dropped socket is the end of the episode, the trainer's to rerun.
    'kill -9 mid-call, then restart': killed('transport', undefined),
  },
  // The session is the store's: a failure of ours is the client's 5xx with retryable, and the episode is lost
  // (RFT_ERR_OPENENV_ROLLOUT_LOST) unless the same id sent again runs it; after a kill -9 the session lives on,
  // and the cut call's retry under its id is RFT_ERR_CALL_INTERRUPTED (what it did is unknown: not run again).
  'OpenEnv /mcp': {
    'store down mid-episode': storeDown('RFT_ERR_STORE', true),
    'sandbox lost mid-call': sandboxLost(/^RFT_ERR_SANDBOX_(LOST|INTERRUPTED)$/, { lost: LOST.openEnv }),
    'grader failure': graderFailure((r) => expectRetry(r, undefined)),
    'slow tool start': slowStart('RFT_ERR_TOOL_START_TIMEOUT', LOST.openEnv),
    'kill -9 mid-call, then restart': killed('transport', (ep, g) => ep.call('echo', { text: 'cut', wait_for: g }, 'call_cut'), 'RFT_ERR_CALL_INTERRUPTED'),
  },
  reward: {
    'store down mid-episode': storeDownGrade,
    'sandbox lost mid-call': na('not applicable: the reward door grades with in-process graders, it holds no sandbox'),
    'grader failure': graderFailure((r) => expectRetry(r, undefined)),
    'slow tool start': na(NO_TOOLS),
    'kill -9 mid-call, then restart': na(
      'not applicable: the reward door has no tool call and no rollout identity: a grade cut by the kill is not in the record (a grade is recorded when it ends), and slime\'s or OpenRLHF\'s retry after the restart is a new grade',
    ),
  },
  SandboxFusion: {
    'store down mid-episode': storeDown(undefined, false, 'run_code', { code: 'print(1)' }),
    // verl retries the 504 (the lost run is not recorded), and the retry runs it.
    'sandbox lost mid-call': sandboxLost(undefined, { perRun: true, rerun: true }),
    'grader failure': na(NO_GRADE_SF),
    'slow tool start': na(NO_BRIDGE_SF),
    'kill -9 mid-call, then restart': na('not applicable: a run holds no rollout across requests and verl does not retry a dropped connection; the run is a rollout of its own, recorded only when it answers'),
  },
};

// ---- the suite -----------------------------------------------------------------------------------

describe('conformance table', () => {
  it('has a row for every door and every case (a row may say `not applicable: why`)', () => {
    for (const door of DOORS) {
      const rows = TABLE[door.name] as Partial<Record<Case, Row>> | undefined;
      expect(rows, `${door.name} has no row`).toBeDefined();
      for (const c of CASES) {
        const row = rows![c];
        expect(row, `${door.name} x ${c}: no row`).toBeDefined();
        if (row && 'na' in row) expect(row.na).toMatch(/^not applicable: \S/);
      }
    }
    expect(Object.keys(TABLE).sort()).toEqual(DOORS.map((d) => d.name).sort());
  });
});

function rowsOf(c: Case): void {
  for (const door of DOORS) {
    const row = TABLE[door.name][c];
    if ('na' in row) it.skip(`${door.name}: ${row.na}`, () => undefined);
    else if ('todo' in row) it.todo(`${door.name}: ${row.todo}`);
    else it(door.name, { timeout: 90_000 }, () => row.run(door));
  }
}

describeIf(present.bwrap, 'bubblewrap', 'bubblewrap sandbox driver not available')('failures of ours on a shared server', () => {
  beforeAll(async () => {
    // On Postgres behind the proxy when there is one (the store-down rows need it), else on SQLite.
    if (pg === undefined) proxy = await startPgProxy();
    const envs = environments(TOOLS, 'exact');
    envDirs.push(envs);
    main = await startTestServer({
      gradersDir: fixtureGraders,
      env: {
        ...(pg === undefined ? { RFT_STORE: 'postgres', RFT_DATABASE_URL: proxy.url, RFT_PG_SCHEMA: schema } : { RFT_SQLITE_SYNC: 'normal' }),
        RFT_SANDBOX: 'bwrap',
        RFT_SANDBOX_WARM: '0',
        RFT_TOOL_TIMEOUT_MS: '60000',
        RFT_DEFAULT_GRADER: 'exact',
        RFT_ENVIRONMENTS: envs,
        RFT_NEMO_GYM_PORT: '0',
        RFT_PRIVATE_PORT: '0',
        RFT_MCP_START_TIMEOUT_MS: '1000',
        RFT_MCP_CONFIG: writeMcpJson({
          // never starts for a rollout (its gate dir stays empty); the boot probe passes at once
          stuck: { command: 'node', args: [join(FIXTURES, 'gated-start-server.mjs'), mkdtempSync(join(tmpdir(), 'rft-never-')), 'rollout:${RFT_TRACE_ID}'], prefix: 'stuck_', tools: ['echo'] },
        }),
      },
    });
    mainDoors = { main: main.url, key: main.key, nemoGym: main.app.rft.nemoGym!.url, private: main.app.rft.privateDoors!.url, environment: 'conf', tools: TOOLS };
  }, 120_000);
  afterAll(async () => {
    await main?.close();
    await proxy?.close();
    if (pg === undefined) await dropSchema(schema);
  });

  describeIf(pg === undefined, 'Postgres', pg ?? '')('store down mid-episode', () => rowsOf('store down mid-episode'));
  describe('sandbox lost mid-call', () => rowsOf('sandbox lost mid-call'));
  describe('slow tool start', () => rowsOf('slow tool start'));
});

describe('grader failure', () => {
  beforeAll(async () => {
    const envs = environments(['echo'], 'broken');
    envDirs.push(envs);
    graders = await startTestServer({
      toolsDir: fixtureTools,
      gradersDir: fixtureGraders,
      env: { RFT_DEFAULT_GRADER: 'broken', RFT_ENVIRONMENTS: envs, RFT_NEMO_GYM_PORT: '0', RFT_PRIVATE_PORT: '0', RFT_SQLITE_SYNC: 'normal' },
    });
    graderDoors = { main: graders.url, key: graders.key, nemoGym: graders.app.rft.nemoGym!.url, private: graders.app.rft.privateDoors!.url, environment: 'conf', tools: ['echo'] };
  });
  afterAll(() => graders?.close());
  rowsOf('grader failure');
});

describe('kill -9 mid-call, then restart', () => {
  beforeAll(async () => {
    const envs = environments(['echo'], 'exact');
    envDirs.push(envs);
    const [nemo, priv] = [await freePort(), await freePort()];
    childEnv = {
      RFT_API_KEYS: `t:${KEY}`,
      RFT_TOOLS_DIR: fixtureTools,
      RFT_GRADERS_DIR: fixtureGraders,
      RFT_DEFAULT_GRADER: 'exact',
      RFT_ENVIRONMENTS: envs,
      RFT_DATA_DIR: mkdtempSync(join(tmpdir(), 'rft-conformance-kill-')),
      RFT_NEMO_GYM_PORT: String(nemo),
      RFT_PRIVATE_PORT: String(priv),
    };
    envDirs.push(childEnv.RFT_DATA_DIR!);
    child = await spawnServer(childEnv);
    const port = (u: string) => new URL(u).port;
    childEnv.PORT = port(child.url);
    childDoors = { main: child.url, key: KEY, nemoGym: `http://127.0.0.1:${nemo}`, private: `http://127.0.0.1:${priv}`, environment: 'conf', tools: ['echo'] };
    await killMidCalls();
  }, 180_000);
  afterAll(async () => {
    await child?.stop();
    for (const d of envDirs) rmSync(d, { recursive: true, force: true });
  });
  rowsOf('kill -9 mid-call, then restart');
});
