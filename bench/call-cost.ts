// What one `shell` call costs in CPU, by part, on a server in its own process (issue 24: at 2 s of think
// time, 500 rollouts make ~250 calls a second, and 2 cores keep up only while a call costs under ~8 ms
// of CPU in all). Calls one at a time on one rollout (its sandbox made before), N of them, and reads
// /proc before and after: the server process (its own time), its children's (the bwrap supervisor,
// or for Docker nothing: the engine's processes are not ours), the supervisor's reaped children (the
// commands: bubblewrap's enter chain, the shell, the command), this client, and the whole machine.
// Baseline, same run: the same command spawned directly by this process (`sh -c`, no sandbox, no HTTP).
// Run: node --conditions=rft-source --import tsx bench/call-cost.ts [calls=300] [--driver=bwrap|docker] [--command='echo hi'] [--cpu-prof=DIR] [--burst=500]
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import { childrenOf } from './lib/server-stats.js';
import { spawnServer } from '../test/helpers/child-server.js';
import { repoRoot } from '../test/helpers/server.js';

const args = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const calls = Number(args[0] ?? 300);
const flag = (name: string): string | undefined => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const driver = flag('driver') ?? 'bwrap';
const command = flag('command') ?? 'echo hi';
/** --cpu-prof=DIR: the server writes a V8 CPU profile of its run there (node --cpu-prof). */
const cpuProf = flag('cpu-prof');
/** --burst=N: what N such calls arriving at once need of the machine (a training step's first calls). */
const burst = Number(flag('burst') ?? 500);
const KEY = 'bench-call-cost-key-0123456789abcdef';
const TICK_MS = 10; // clock ticks (USER_HZ 100)

/** utime+stime and cutime+cstime of a process, ms (0 once it is gone). */
async function cpu(pid: number): Promise<{ own: number; reaped: number }> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ').map(Number);
  // After the comm: state(0) ppid(1) ... utime(11) stime(12) cutime(13) cstime(14).
  return { own: ((f[11] ?? 0) + (f[12] ?? 0)) * TICK_MS, reaped: ((f[13] ?? 0) + (f[14] ?? 0)) * TICK_MS };
}

/** Busy CPU of the whole machine, ms (all but idle and iowait). */
async function machine(): Promise<number> {
  const f = (await readFile('/proc/stat', 'utf8')).split('\n')[0]!.split(/\s+/).slice(1).map(Number);
  const total = f.slice(0, 8).reduce((a, b) => a + b, 0);
  return (total - (f[3] ?? 0) - (f[4] ?? 0)) * TICK_MS;
}

interface Parts {
  wallMs: number;
  server: number;
  supervisor: number;
  commands: number;
  client: number;
  machine: number;
}

async function measure(label: string, n: number, one: () => Promise<void>, pids: { server?: number; supervisor?: number }): Promise<Parts> {
  const read = async () => ({
    server: pids.server ? (await cpu(pids.server)).own : 0,
    sup: pids.supervisor ? await cpu(pids.supervisor) : { own: 0, reaped: 0 },
    client: (process.cpuUsage().user + process.cpuUsage().system) / 1000,
    machine: await machine(),
    t: performance.now(),
  });
  const a = await read();
  for (let i = 0; i < n; i++) await one();
  const b = await read();
  const per = (x: number): number => x / n;
  const p: Parts = {
    wallMs: per(b.t - a.t),
    server: per(b.server - a.server),
    supervisor: per(b.sup.own - a.sup.own),
    commands: per(b.sup.reaped - a.sup.reaped),
    client: per(b.client - a.client),
    machine: per(b.machine - a.machine),
  };
  const f = (x: number): string => `${x.toFixed(2).padStart(6)} ms`;
  console.log(`  ${label.padEnd(22)} wall ${f(p.wallMs)} | CPU: server ${f(p.server)}, supervisor ${f(p.supervisor)}, commands ${f(p.commands)}, client ${f(p.client)}; machine ${f(p.machine)}`);
  return p;
}

const load = (await readFile('/proc/loadavg', 'utf8')).split(' ').slice(0, 3).join(' ');
console.log(`call-cost bench: ${calls} \`shell\` calls one at a time (${JSON.stringify(command)}), ${driver}; load average before ${load}`);

// The baseline's commands run in a directory of their own, as the sandbox's run in its workspace.
const baseDir = await mkdtemp(join(tmpdir(), 'rft-bench-call-cost-base-'));
const base = await measure('spawn sh -c (baseline)', calls, () => new Promise<void>((resolve, reject) => {
  const p = spawn('/bin/sh', ['-c', command], { stdio: 'ignore', cwd: baseDir });
  p.once('error', reject).once('exit', () => resolve());
}), {});
await rm(baseDir, { recursive: true, force: true });

const dataDir = await mkdtemp(join(tmpdir(), 'rft-bench-call-cost-'));
const srv = await spawnServer(
  { RFT_DATA_DIR: dataDir, RFT_API_KEYS: `b:${KEY}`, RFT_RATE_LIMIT: '0', RFT_SANDBOX: driver, RFT_TOOLS_DIR: join(repoRoot, 'tools'), RFT_GRADERS_DIR: join(repoRoot, 'graders'), RFT_LOG_LEVEL: 'error',
    ...(cpuProf ? { NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${cpuProf}` } : {}) },
  120_000,
);
const dispatcher = new Agent({ connections: 1 });
try {
  let n = 0;
  const call = async (): Promise<void> => {
    const r = await request(`${srv.url}/tools`, {
      method: 'POST', dispatcher, headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ type: 'function_call', call_id: `c${n++}`, name: 'shell', arguments: JSON.stringify({ command }), trace_id: 'trace_call_cost', item: { tool_budget: calls * 3 } }),
    });
    const body = (await r.body.json()) as { output?: string };
    if (r.statusCode !== 200 || typeof body.output !== 'string') throw new Error(`call ${n}: ${r.statusCode} ${JSON.stringify(body)}`);
  };
  for (let i = 0; i < 10; i++) await call(); // the sandbox made, the paths warm
  const pid = srv.proc.pid!;
  const kids = await childrenOf(pid);
  const names = await Promise.all(kids.map(async (k) => [k, (await readFile(`/proc/${k}/cmdline`, 'utf8').catch(() => '')).split('\0')[0]] as const));
  const supervisor = names.find(([, argv0]) => argv0 === 'rft-supervisor')?.[0];
  const srvParts = await measure(`POST /tools shell`, calls, call, { server: pid, ...(supervisor ? { supervisor } : {}) });
  const x = (a: number, b: number): string => `x${(a / b).toFixed(1)}`;
  console.log('');
  console.log(`a call against the baseline: wall ${x(srvParts.wallMs, base.wallMs)}, machine CPU ${x(srvParts.machine, base.machine)}`);
  const cores = availableParallelism();
  console.log(`machine CPU per call ${srvParts.machine.toFixed(2)} ms: at ${cores} cores, ${Math.floor((cores * 1_000) / srvParts.machine)} calls a second at most`);
  // A training step's first calls arrive at once (bench/steps.ts): the last of them ends no sooner than
  // the machine has done them all, whatever the order; the same for the bare spawn.
  const drain = (perCall: number): string => `${((burst * perCall) / cores / 1000).toFixed(2)} s`;
  console.log(`${burst} such calls at once take at least ${drain(srvParts.machine)} of the ${cores} cores; the same commands spawned bare, ${drain(base.machine)}`);
} finally {
  await srv.stop();
  await dispatcher.close();
  await rm(dataDir, { recursive: true, force: true });
}
