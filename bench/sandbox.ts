// Sandbox costs per driver: the bare primitive (a bare `bwrap ... true`, `docker run --rm` via the
// CLI, or a plain spawn for the process driver) against this project's create + first exec, a warm
// exec, and over HTTP a new rollout's first `shell` call and a burst of new rollouts.
// Run: node --conditions=rft-source --import tsx bench/sandbox.ts [samples] [burst-rollouts]
import { spawn } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { request } from 'undici';
import { osDirArgs } from '../src/sandbox/bwrap-args.js';
import { BWRAP } from '../src/sandbox/bwrap-driver.js';
import { instanceIdFor } from '../src/sandbox/from-config.js';
import { defaultLimits } from '../src/sandbox/limits.js';
import { selectDriver } from '../src/sandbox/select.js';
import type { SandboxDriver } from '../src/sandbox/types.js';
import { driversPresent, tempRoot, DOCKER_IMAGE } from '../test/sandbox/helpers.js';
import { startTestServer } from '../test/helpers/server.js';

const samples = Number(process.argv[2] ?? 40);
const burst = Number(process.argv[3] ?? 200);

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN;
}
const fmt = (xs: number[]): string => `p50 ${pct(xs, 50).toFixed(1).padStart(6)} ms   p99 ${pct(xs, 99).toFixed(1).padStart(6)} ms   (n=${xs.length})`;

function runOnce(cmd: string, args: string[]): Promise<number> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const c = spawn(cmd, args, { stdio: 'ignore' });
    c.on('error', reject);
    c.on('close', (code) => (code === 0 ? resolve(performance.now() - t0) : reject(new Error(`${cmd} exited ${code}`))));
  });
}

async function driverFigures(name: 'process' | 'bwrap' | 'docker', root: string): Promise<number> {
  const n = name === 'docker' ? Math.min(samples, 10) : samples;
  const primitive = (): Promise<number> =>
    name === 'process'
      ? runOnce('/bin/sh', ['-c', 'true'])
      : name === 'bwrap'
        ? runOnce(BWRAP, ['--unshare-all', '--die-with-parent', ...osDirArgs(), '--', '/usr/bin/true'])
        : runOnce('docker', ['run', '--rm', '--network', 'none', DOCKER_IMAGE, 'true']);
  const driver: SandboxDriver = await selectDriver(name, { sandboxesRoot: join(root, name), instanceId: `bench-${name}`, dockerImage: DOCKER_IMAGE });
  const bare: number[] = [];
  const first: number[] = [];
  const warm: number[] = [];
  const destroy: number[] = [];
  // Baseline and driver samples alternate, so a busy machine weighs on both alike.
  for (let i = 0; i < n; i++) {
    bare.push(await primitive());
    const t0 = performance.now();
    const sb = await driver.create({ traceId: `bench_${i}`, limits: defaultLimits, labels: {}, files: { 'README.md': 'bench' } });
    await sb.exec(['true']);
    first.push(performance.now() - t0);
    const t1 = performance.now();
    await sb.exec('true');
    warm.push(performance.now() - t1);
    const t2 = performance.now();
    await sb.destroy();
    destroy.push(performance.now() - t2);
  }
  await driver.close?.();
  const label = name === 'process' ? 'spawn sh -c true' : name === 'bwrap' ? 'bare bwrap true' : 'docker run --rm true (CLI)';
  console.log(`\n[${name}]`);
  console.log(`  baseline  ${label.padEnd(28)} ${fmt(bare)}`);
  console.log(`  create + first exec            ${fmt(first)}   x${(pct(first, 50) / pct(bare, 50)).toFixed(2)} of baseline p50`);
  console.log(`  second exec (same sandbox)     ${fmt(warm)}   x${(pct(warm, 50) / pct(bare, 50)).toFixed(2)}`);
  console.log(`  destroy                        ${fmt(destroy)}`);
  return pct(first, 50);
}

async function shellCall(url: string, key: string, traceId: string, callId: string, command: string): Promise<{ ms: number; status: number }> {
  const t0 = performance.now();
  const res = await request(`${url}/tools`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ type: 'function_call', call_id: callId, name: 'shell', arguments: JSON.stringify({ command }), trace_id: traceId, item: {} }),
  });
  await res.body.text();
  return { ms: performance.now() - t0, status: res.statusCode };
}

async function httpFigures(driver: 'bwrap' | 'process'): Promise<void> {
  const srv = await startTestServer({
    env: { RFT_SANDBOX: driver, RFT_SANDBOX_CAP: String(Math.max(256, burst + 16)), RFT_SANDBOX_TTL_MS: '1000', RFT_RATE_LIMIT: '1000000' },
  });
  try {
    const first: number[] = [];
    const warm: number[] = [];
    for (let i = 0; i < samples; i++) {
      const trace = `trace_first_${driver}_${i}`;
      first.push((await shellCall(srv.url, srv.key, trace, 'c1', 'echo hi')).ms);
      warm.push((await shellCall(srv.url, srv.key, trace, 'c2', 'echo hi')).ms);
    }
    console.log(`\n[HTTP, ${driver}] POST /tools shell "echo hi"`);
    console.log(`  baseline  2nd call, same rollout       ${fmt(warm)}`);
    console.log(`  new rollout's first call           ${fmt(first)}   x${(pct(first, 50) / pct(warm, 50)).toFixed(2)}`);

    let peakRss = process.memoryUsage().rss;
    const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 25);
    const lat: number[] = [];
    let errors = 0;
    let fivexx = 0;
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: burst }, async (_, r) => {
        for (let c = 1; c <= 3; c++) {
          try {
            const res = await shellCall(srv.url, srv.key, `trace_burst_${driver}_${r}`, `c${c}`, `echo call ${c}; ls | wc -l`);
            lat.push(res.ms);
            if (res.status >= 500) fivexx++;
            else if (res.status !== 200) errors++;
          } catch {
            errors++;
          }
        }
      }),
    );
    const wall = performance.now() - t0;
    clearInterval(sampler);
    const stats = srv.app.rft.sandboxes?.stats();
    console.log(`  burst: ${burst} new rollouts at once x 3 shell calls: ${(wall / 1000).toFixed(2)} s, errors ${errors}, 5xx ${fivexx}`);
    console.log(`         per call ${fmt(lat)}; peak RSS (server + client, one process) ${(peakRss / 1024 / 1024).toFixed(0)} MB; live sandboxes ${stats?.live}`);
    // TTL 1 s and a sweeper every second: wait for it (bounded) and report what is left.
    const waitStart = performance.now();
    while ((srv.app.rft.sandboxes?.stats().live ?? 0) > 0 && performance.now() - waitStart < 20_000) await new Promise((r) => setTimeout(r, 250));
    const after = srv.app.rft.sandboxes?.stats();
    const rootDir = join(tmpdir(), 'rft-endpoints', instanceIdFor(srv.dataDir));
    let dirs = 0;
    for (const d of (await readdir(rootDir).catch(() => [] as string[])).filter((n) => n.startsWith('sb_'))) {
      const meta = JSON.parse(await readFile(join(rootDir, d, 'meta.json'), 'utf8').catch(() => '{}')) as { traceId?: string };
      if (meta.traceId !== '(pooled)') dirs++; // the warm pool's prepared workdirs are not sandboxes
    }
    console.log(`         after the TTL (+${((performance.now() - waitStart) / 1000).toFixed(1)} s): live ${after?.live}, reaped ${after?.reaped}, sandbox dirs left under ${rootDir} ${dirs}`);
  } finally {
    await srv.close();
  }
}

const present = await driversPresent();
const tmp = await tempRoot();
try {
  console.log(`sandbox bench: ${samples} samples per figure, burst of ${burst} rollouts; drivers present: ${Object.entries(present).filter(([, v]) => v).map(([k]) => k).join(', ')}`);
  for (const name of ['process', 'bwrap', 'docker'] as const) if (present[name]) await driverFigures(name, tmp.root);
  if (present.bwrap) await httpFigures('bwrap');
} finally {
  await tmp.cleanup();
}
