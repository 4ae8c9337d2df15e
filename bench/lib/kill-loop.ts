// The kill loop: rounds of load on one data dir (several clients, parallel calls on shared rollouts,
// a tool with a countable side effect, a sandbox tool), `kill -9` at a random moment, restart,
// the trainer's retries of every unanswered call, then a check of what the guarantees promise:
// no acknowledged call lost, no call run twice, no budget overspent, no sandbox left behind, no
// interrupted call charged or shown as output. With sandboxes, coding rollouts (bench/lib/kill-coding.ts)
// run across the rounds too: no call answered and no rollout graded on a workspace a restart replaced.
// Used by bench/kill-loop.ts (25 rounds) and test/server/kill-loop.test.ts (5 rounds).
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { instanceIdFor } from '../../src/sandbox/from-config.js';
import { spawnServer, type ChildServer } from '../../test/helpers/child-server.js';
import { codingClient, type CodingCounts, type CodingTrainer } from './kill-coding.js';

const KEY = 'kill-loop-key-0123456789abcdef';
const headers = { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' };

export interface KillLoopOptions {
  rounds: number;
  /** Concurrent clients, each sending parallel calls to rollouts shared with the others. */
  clients?: number;
  /** Rollouts per round, shared by all clients. */
  rollouts?: number;
  /** Each rollout's tool budget (its row's tool_budget). */
  budget?: number;
  /** Sandbox driver for the sbx tool ('none': count tool only). */
  sandbox?: 'bwrap' | 'process' | 'docker' | 'none';
  /** kill -9 after a random delay in this range (ms) from the start of the round's load. */
  killAfterMs?: [number, number];
  /** Coding rollouts at once, across the rounds (with a sandbox driver; default 2). */
  codingClients?: number;
  log?: (line: string) => void;
}

export interface KillLoopResult {
  rounds: number;
  /** Calls answered 200 (before a kill, or to a retry after it). */
  acknowledged: number;
  /** Calls whose reply a kill cut off, retried after the restart. */
  retried: number;
  /** Of those, calls answered 503 RFT_ERR_CALL_INTERRUPTED (running at the kill: never run again). */
  interrupted: number;
  lost: number;
  ranTwice: number;
  overspent: number;
  sandboxesLeft: number;
  /** Interrupted calls still charged to their rollout's budget. */
  interruptedCharged: number;
  /** 200 replies whose output is an interrupted call. */
  interruptedShown: number;
  coding: CodingCounts;
}

interface Call {
  traceId: string;
  callId: string;
  tool: 'count' | 'sbx';
  args: Record<string, unknown>;
  /** The output of a 200 reply, once there is one. */
  output?: string | undefined;
}

interface RecordJson {
  budget: { used: number; limit: number };
  calls: { call_id: string; output: string | null; status: string }[];
}

const pick = <T>(xs: readonly T[]): T => xs[Math.floor(Math.random() * xs.length)]!;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The call's output (a 200), or the error code of a 5xx; neither when the server died under it. */
async function postCall(url: string, c: Call, item: Record<string, unknown>): Promise<{ output?: string; code?: string }> {
  const body = { type: 'function_call', id: `fc_${c.callId}`, call_id: c.callId, name: c.tool, arguments: JSON.stringify(c.args), trace_id: c.traceId, item };
  try {
    const res = await request(`${url}/tools`, { method: 'POST', headers, body: JSON.stringify(body) });
    const json = (await res.body.json()) as { output?: string; error?: { code?: string } };
    if (res.statusCode === 200 && typeof json.output === 'string') return { output: json.output };
    return json.error?.code !== undefined ? { code: json.error.code } : {};
  } catch {
    return {}; // the server died under this call
  }
}

async function record(url: string, traceId: string): Promise<RecordJson | undefined> {
  const res = await request(`${url}/v1/rollouts/${traceId}`, { headers });
  if (res.statusCode === 404) {
    await res.body.dump();
    return undefined;
  }
  return (await res.body.json()) as RecordJson;
}

/** Processes whose command line names this server's sandboxes root (bwrap binds its workdirs). */
function sandboxProcesses(root: string): number[] {
  const pids: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    try {
      const status = readFileSync(`/proc/${name}/status`, 'utf8');
      if (/^State:\s+Z/m.test(status)) continue;
      if (readFileSync(`/proc/${name}/cmdline`, 'utf8').includes(root)) pids.push(Number(name));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

const sandboxDirs = (root: string): string[] => (existsSync(root) ? readdirSync(root) : []);

/** Waits until fn() is empty (at most timeoutMs); returns what is left. */
async function untilEmpty<T>(fn: () => T[], timeoutMs: number): Promise<T[]> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const left = fn();
    if (left.length === 0 || Date.now() > end) return left;
    await sleep(50);
  }
}

export async function killLoop(o: KillLoopOptions): Promise<KillLoopResult> {
  const clients = o.clients ?? 4;
  const rolloutsPerRound = o.rollouts ?? 6;
  const budget = o.budget ?? 8;
  const sandbox = o.sandbox ?? 'bwrap';
  const [killMin, killMax] = o.killAfterMs ?? [150, 1200];
  const log = o.log ?? (() => {});
  const work = mkdtempSync(join(tmpdir(), 'rft-kill-loop-'));
  const dataDir = join(work, 'data');
  const effectsFile = join(work, 'effects.jsonl');
  writeFileSync(effectsFile, '');
  const sandboxesRoot = join(tmpdir(), 'rft-endpoints', instanceIdFor(dataDir));
  const env = {
    RFT_DATA_DIR: dataDir,
    RFT_API_KEYS: `k:${KEY}`,
    RFT_TOOLS_DIR: join(import.meta.dirname, '..', 'units', 'kill-tools'),
    RFT_GRADERS_DIR: join(import.meta.dirname, '..', 'units', 'kill-graders'),
    RFT_SANDBOX_TEMPLATES: join(import.meta.dirname, '..', '..', 'examples'),
    RFT_SANDBOX: sandbox,
    RFT_RATE_LIMIT: '0',
    RFT_TOOL_BUDGET: String(budget),
    BENCH_EFFECTS_FILE: effectsFile,
  };
  const coding: CodingTrainer = {
    url: () => server?.url,
    stopped: () => codingDone,
    headers,
    traces: [],
    acked: [],
    counts: { started: 0, graded: 0, dropped: 0, droppedBy: {}, replacedCalls: 0, gradedReplaced: 0, shownInterrupted: 0 },
  };
  const result: KillLoopResult = {
    rounds: o.rounds, acknowledged: 0, retried: 0, interrupted: 0, lost: 0, ranTwice: 0, overspent: 0, sandboxesLeft: 0,
    interruptedCharged: 0, interruptedShown: 0, coding: coding.counts,
  };
  const all: Call[] = [];
  const traces: string[] = [];
  let codingDone = false;
  let server: ChildServer | undefined = await spawnServer(env, 60_000);
  const codingRuns = sandbox === 'none' ? [] : Array.from({ length: o.codingClients ?? 2 }, (_, k) => codingClient(coding, k));
  try {
    for (let round = 0; round < o.rounds; round++) {
      const live: ChildServer = server!;
      const roundTraces = Array.from({ length: rolloutsPerRound }, (_, i) => `trace_kill_${round}_${i}_${process.pid}`);
      traces.push(...roundTraces);
      const item = { tool_budget: budget };
      let n = 0;
      let stop = false;
      const unanswered: Call[] = [];
      const client = async (k: number) => {
        while (!stop) {
          // Parallel calls of one rollout, as a model's parallel tool calls.
          const traceId = pick(roundTraces);
          const batch: Call[] = Array.from({ length: 1 + Math.floor(Math.random() * 3) }, () => {
            const tool = sandbox !== 'none' && Math.random() < 0.2 ? 'sbx' : 'count';
            return { traceId, callId: `call_${round}_${k}_${n++}`, tool, args: tool === 'count' ? { delay_ms: Math.floor(Math.random() * 40) } : {} };
          });
          all.push(...batch);
          await Promise.all(
            batch.map(async (c) => {
              const out = (await postCall(live.url, c, item)).output;
              if (out === undefined) unanswered.push(c);
              else c.output = out;
            }),
          );
        }
      };
      const load = Promise.all(Array.from({ length: clients }, (_, k) => client(k)));
      await sleep(killMin + Math.random() * (killMax - killMin));
      const dirsAtKill = sandboxDirs(sandboxesRoot);
      await live.stop('SIGKILL');
      stop = true;
      await load;
      const procsAtKill = sandboxProcesses(sandboxesRoot);
      server = undefined;
      server = await spawnServer(env, 60_000);
      // What the killed server left: its workdirs are reaped by the new one's start(); its
      // sandboxes' processes die with it (bwrap) or are killed by that reaping.
      const dirsLeft = await untilEmpty(() => sandboxDirs(sandboxesRoot).filter((d) => dirsAtKill.includes(d)), 10_000);
      const procsLeft = await untilEmpty(() => procsAtKill.filter((p) => existsSync(`/proc/${p}`)), 10_000);
      result.sandboxesLeft += dirsLeft.length + procsLeft.length;
      // The trainer retries every call that got no answer, with the same call id (at most 3 times
      // after a 5xx: then it drops the rollout).
      let interrupted = 0;
      for (const c of unanswered) {
        for (let attempt = 0; attempt < 5 && c.output === undefined; attempt++) {
          const r = await postCall(server.url, c, item);
          c.output = r.output;
          if (r.code === 'RFT_ERR_CALL_INTERRUPTED') {
            interrupted++;
            break;
          }
        }
        if (c.output?.includes('interrupted by a server restart')) result.interruptedShown++;
      }
      result.retried += unanswered.length;
      result.interrupted += interrupted;
      log(
        `round ${round + 1}/${o.rounds}: ${all.filter((c) => c.traceId.startsWith(`trace_kill_${round}_`)).length} calls, ` +
          `${unanswered.length} cut off by the kill (${interrupted} interrupted), sandbox dirs at the kill ${dirsAtKill.length}, left ${dirsLeft.length + procsLeft.length}`,
      );
    }

    codingDone = true;
    await Promise.all(codingRuns);
    result.interruptedShown += coding.counts.shownInterrupted;

    // What ran: one line per run.
    const runs = new Map<string, number>();
    const runsPerTrace = new Map<string, number>();
    for (const line of readFileSync(effectsFile, 'utf8').split('\n')) {
      if (!line) continue;
      const [traceId, callId] = JSON.parse(line) as [string, string];
      runs.set(`${traceId} ${callId}`, (runs.get(`${traceId} ${callId}`) ?? 0) + 1);
      runsPerTrace.set(traceId, (runsPerTrace.get(traceId) ?? 0) + 1);
    }
    result.ranTwice = [...runs.values()].filter((x) => x > 1).length;
    const records = new Map<string, RecordJson | undefined>();
    for (const t of [...traces, ...coding.traces]) records.set(t, await record(server.url, t));
    for (const c of [...all, ...coding.acked]) {
      if (c.output === undefined) continue;
      result.acknowledged++;
      const rec = records.get(c.traceId)?.calls.find((x) => x.call_id === c.callId);
      if (!rec || rec.output !== c.output || rec.status === 'running') result.lost++;
    }
    // Every tool here costs 1: a budget holds exactly the calls that ran (not the refused, not the interrupted).
    for (const r of records.values()) {
      if (!r) continue;
      const ran = r.calls.filter((x) => x.status !== 'interrupted' && x.status !== 'budget_exceeded').length;
      result.interruptedCharged += Math.max(0, Math.min(r.budget.used - ran, r.calls.filter((x) => x.status === 'interrupted').length));
    }
    for (const t of traces) {
      const r = records.get(t);
      // A call a kill cut may have run (its side effect is there) but is not charged, by design: the
      // budget bounds the calls that completed.
      const cut = r?.calls.filter((x) => x.status === 'interrupted').length ?? 0;
      const ran = (runsPerTrace.get(t) ?? 0) - cut;
      if (ran > budget || (r && r.budget.used > r.budget.limit)) result.overspent++;
    }
    await server.stop('SIGTERM');
    server = undefined;
    // A graceful stop destroys every sandbox; nothing of this instance may remain.
    result.sandboxesLeft += (await untilEmpty(() => sandboxDirs(sandboxesRoot), 10_000)).length;
    result.sandboxesLeft += (await untilEmpty(() => sandboxProcesses(sandboxesRoot), 10_000)).length;
    return result;
  } finally {
    codingDone = true;
    await Promise.all(codingRuns);
    await server?.stop('SIGKILL');
    // After a failed round the last server was killed: its sandboxes' mounts stay until a start
    // reaps them, so removing them may fail; that must not hide the round's own error.
    for (const dir of [work, sandboxesRoot]) {
      try {
        rmSync(dir, { recursive: true, force: true });
      } catch (e) {
        log(`could not remove ${dir}: ${(e as Error).message}`);
      }
    }
  }
}
