// Sandbox costs per driver against the bare primitive, measured in the same run (samples alternate,
// so a busy machine weighs on both alike):
//   bwrap  a later command in a rollout's sandbox (sh -c, through the supervisor: its own PID, mount
//          and IPC namespaces, rlimits, the seccomp filter) against spawning /usr/bin/true;
//          a new rollout's first `shell` call over HTTP (the server in this process, its warm pool
//          of two refilled between samples) against a bare `bwrap --unshare-all ... true`; create + first exec and destroy
//          through the driver;
//   process  create + first exec and a later exec against spawning `sh -c true`;
//   docker   bench/docker.ts's per-operation figures against the Docker CLI (`docker run --rm`,
//          `docker exec`).
// Bursts: bench/burst.ts (bwrap), bench/docker.ts (engines).
// Run: node --conditions=rft-source --import tsx bench/sandbox.ts [samples=40] [docker-samples=10]
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { performance } from 'node:perf_hooks';
import { join } from 'node:path';
import { request } from 'undici';
import { osDirArgs } from '../src/sandbox/drivers/bwrap/args.js';
import { BWRAP } from '../src/sandbox/drivers/bwrap/driver.js';
import { instanceIdFor } from '../src/sandbox/instance-id.js';
import { defaultLimits } from '../src/sandbox/workspace/limits.js';
import { selectDriver } from '../src/sandbox/select.js';
import type { SandboxDriver } from '../src/sandbox/types.js';
import { driversPresent, tempRoot } from '../test/sandbox/helpers.js';
import { startTestServer } from '../test/helpers/server.js';
import { perOperation } from './docker.js';
import { pct } from './lib/burst.js';

const samples = Number(process.argv[2] ?? 40);
const dockerSamples = Number(process.argv[3] ?? 10);

const fmt = (xs: number[]): string => `p50 ${pct(xs, 50).toFixed(2).padStart(7)} ms   p99 ${pct(xs, 99).toFixed(2).padStart(7)} ms   (n=${xs.length})`;
const ratio = (xs: number[], base: number[]): string =>
  `x${(pct(xs, 50) / pct(base, 50)).toFixed(2)} at p50, x${(pct(xs, 99) / pct(base, 99)).toFixed(2)} at p99`;

function runOnce(cmd: string, args: string[]): Promise<number> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const c = spawn(cmd, args, { stdio: 'ignore' });
    c.on('error', reject);
    c.on('close', (code) => (code === 0 ? resolve(performance.now() - t0) : reject(new Error(`${cmd} exited ${code}`))));
  });
}

const bareBwrap = (): Promise<number> => runOnce(BWRAP, ['--unshare-all', '--die-with-parent', '--as-pid-1', ...osDirArgs(), '--', '/usr/bin/true']);

async function driverFigures(name: 'process' | 'bwrap', root: string): Promise<void> {
  const spawnBase = (): Promise<number> => (name === 'bwrap' ? runOnce('/usr/bin/true', []) : runOnce('/bin/sh', ['-c', 'true']));
  const driver: SandboxDriver = await selectDriver(name, { sandboxesRoot: join(root, name), instanceId: `bench-${name}` });
  const base: number[] = [];
  const bare: number[] = [];
  const first: number[] = [];
  const later: number[] = [];
  const destroy: number[] = [];
  try {
    // One sandbox first: the supervisor starts (once per server), not counted.
    await (await driver.create({ traceId: 'bench_warmup', limits: defaultLimits, labels: {} })).destroy();
    for (let i = 0; i < samples; i++) {
      base.push(await spawnBase());
      if (name === 'bwrap') bare.push(await bareBwrap());
      let t = performance.now();
      const sb = await driver.create({ traceId: `bench_${i}`, limits: defaultLimits, labels: {}, files: { 'README.md': 'bench' } });
      await sb.exec('true');
      first.push(performance.now() - t);
      for (let j = 0; j < 3; j++) {
        base.push(await spawnBase());
        t = performance.now();
        const r = await sb.exec('true');
        later.push(performance.now() - t);
        if (r.exitCode !== 0) throw new Error(`exec answered ${JSON.stringify(r)}`);
      }
      t = performance.now();
      await sb.destroy();
      destroy.push(performance.now() - t);
    }
  } finally {
    await driver.close?.();
  }
  const baseLabel = name === 'bwrap' ? 'spawn /usr/bin/true' : 'spawn sh -c true';
  console.log(`\n[${name}]`);
  console.log(`  baseline  ${baseLabel.padEnd(30)} ${fmt(base)}`);
  console.log(`  later exec "true" (sh -c), same sandbox ${fmt(later)}   ${ratio(later, base)}`);
  if (name === 'bwrap') console.log(`  baseline  bare bwrap --unshare-all true ${fmt(bare)}`);
  console.log(`  create + first exec                      ${fmt(first)}   ${ratio(first, name === 'bwrap' ? bare : base)}`);
  console.log(`  destroy                                  ${fmt(destroy)}`);
}

async function shellCall(url: string, key: string, traceId: string, callId: string, command: string): Promise<number> {
  const t0 = performance.now();
  const res = await request(`${url}/tools`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ type: 'function_call', call_id: callId, name: 'shell', arguments: JSON.stringify({ command }), trace_id: traceId, item: {} }),
  });
  const text = await res.body.text();
  if (res.statusCode !== 200 || !text.includes('hi')) throw new Error(`shell answered ${res.statusCode} ${text.slice(0, 200)}`);
  return performance.now() - t0;
}

/** Prepared (pooled) sandboxes under a server's sandboxes root. */
async function pooledCount(root: string): Promise<number> {
  let n = 0;
  for (const d of (await readdir(root).catch(() => [] as string[])).filter((x) => x.startsWith('sb_'))) {
    const meta = await readFile(join(root, d, 'meta.json'), 'utf8').catch(() => '{}');
    if ((JSON.parse(meta) as { traceId?: string }).traceId === '(pooled)') n++;
  }
  return n;
}

async function httpFigures(): Promise<void> {
  const srv = await startTestServer({ env: { RFT_SANDBOX: 'bwrap', RFT_RATE_LIMIT: '0' } });
  const root = join(tmpdir(), 'rft-endpoints', instanceIdFor(srv.dataDir));
  try {
    await shellCall(srv.url, srv.key, 'trace_warmup', 'c1', 'echo hi');
    const bare: number[] = [];
    const first: number[] = [];
    const later: number[] = [];
    for (let i = 0; i < samples; i++) {
      bare.push(await bareBwrap());
      const trace = `trace_first_${i}`;
      first.push(await shellCall(srv.url, srv.key, trace, 'c1', 'echo hi'));
      later.push(await shellCall(srv.url, srv.key, trace, 'c2', 'echo hi'));
      // The warm pool refilled (both prepared sandboxes there), as a steady trickle of rollouts finds it.
      const until = performance.now() + 5_000;
      while ((await pooledCount(root)) < 2 && performance.now() < until) await new Promise((r) => setTimeout(r, 10));
    }
    console.log('\n[bwrap over HTTP] POST /tools shell "echo hi" (the server in this process; record on SQLite)');
    console.log(`  baseline  bare bwrap --unshare-all true ${fmt(bare)}`);
    console.log(`  new rollout's first call               ${fmt(first)}   ${ratio(first, bare)}`);
    console.log(`  its second call                        ${fmt(later)}   ${ratio(later, bare)}`);
  } finally {
    await srv.close();
  }
}

const present = await driversPresent();
const tmp = await tempRoot();
const load = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
try {
  console.log(`sandbox bench: ${samples} samples per figure (docker ${dockerSamples}); load average ${load}; drivers present: ${Object.entries(present).filter(([, v]) => v).map(([k]) => k).join(', ')}`);
  for (const name of ['process', 'bwrap'] as const) if (present[name]) await driverFigures(name, tmp.root);
  if (present.bwrap) await httpFigures();
  if (present.docker && dockerSamples > 0) await perOperation(dockerSamples);
} finally {
  await tmp.cleanup();
}

