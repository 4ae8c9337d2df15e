// Docker sandboxes, against Docker's own CLI in the same run (samples alternate, so a busy machine
// weighs on both):
//   1. per operation: create + first exec (with and without the warm pool) against
//      `docker run --rm ... true`, a later exec against `docker exec <container> true`, destroy;
//   2. a burst over HTTP: N new rollouts at once, C `shell` calls each, on one server whose sandboxes
//      go to two engines, then to one: wall time, errors, 5xx, p50/p99 per call, the server's peak
//      RSS, and containers left after the TTL.
// Needs the engines of .ci/setup-engines.sh (unix:///run/rft-engines/{1,2}.sock).
// Run: node --import tsx bench/docker.ts [samples=10] [rollouts=500] [calls=5] [both|two|one]
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { performance } from 'node:perf_hooks';
import { Agent } from 'undici';
import { burstLines, runBurst } from './lib/burst.js';
import { DockerApi } from '../src/sandbox/drivers/docker/api.js';
import { DockerDriver } from '../src/sandbox/drivers/docker/driver.js';
import { parseDockerHosts } from '../src/sandbox/drivers/docker/hosts.js';
import { instanceIdFor } from '../src/sandbox/instance-id.js';
import { defaultLimits } from '../src/sandbox/workspace/limits.js';
import { spawnServer } from '../test/helpers/child-server.js';
import { repoRoot } from '../test/helpers/server.js';
import { DOCKER_IMAGE } from '../test/sandbox/helpers.js';

const samples = Number(process.argv[2] ?? 10);
const rollouts = Number(process.argv[3] ?? 500);
const calls = Number(process.argv[4] ?? 5);
/** Which bursts: both (default), two (two engines only) or one (one engine only). */
const engines = process.argv[5] ?? 'both';
const ENGINE_1 = '/run/rft-engines/1.sock';
const ENGINE_2 = '/run/rft-engines/2.sock';
const KEY = 'bench-docker-key-0123456789abcdef';

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN;
}
const fmt = (xs: number[]): string => `p50 ${pct(xs, 50).toFixed(1).padStart(7)} ms   p99 ${pct(xs, 99).toFixed(1).padStart(7)} ms   (n=${xs.length})`;
const ratio = (xs: number[], base: number[]): string => `x${(pct(xs, 50) / pct(base, 50)).toFixed(2)} of baseline p50`;

function cli(args: string[]): Promise<number> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const c = spawn('docker', ['-H', `unix://${ENGINE_1}`, ...args], { stdio: 'ignore' });
    c.on('error', reject);
    c.on('close', (code) => (code === 0 ? resolve(performance.now() - t0) : reject(new Error(`docker ${args[0]} exited ${code}`))));
  });
}

/** Docker against its CLI, one operation at a time (bench/sandbox.ts reuses it for its Docker rows). */
export async function perOperation(samples: number): Promise<void> {
  const hosts = parseDockerHosts({ cap: 1000, hosts: `unix://${ENGINE_1}` });
  const cold = new DockerDriver({ instanceId: `bench-docker-${process.pid}`, image: DOCKER_IMAGE, hosts });
  const warm = new DockerDriver({ instanceId: `bench-docker-warm-${process.pid}`, image: DOCKER_IMAGE, hosts, warmPool: 2 });
  await cold.available();
  await warm.available();
  const name = `bench-cli-${process.pid}`;
  await cli(['run', '-d', '--name', name, '--network', 'none', '--init', DOCKER_IMAGE, 'sleep', 'infinity']);
  const run: number[] = [];
  const execCli: number[] = [];
  const first: number[] = [];
  const firstWarm: number[] = [];
  const later: number[] = [];
  const destroy: number[] = [];
  const spec = (i: number) => ({ traceId: `bench_${i}`, limits: defaultLimits, labels: {}, files: { 'README.md': 'bench' } });
  try {
    // Fill the pool once: each later sample waits for its refill, as steady arrivals would find it.
    await (await warm.create(spec(-1))).destroy();
    for (let i = 0; i < samples; i++) {
      run.push(await cli(['run', '--rm', '--network', 'none', DOCKER_IMAGE, 'true']));
      execCli.push(await cli(['exec', name, 'true']));
      let t0 = performance.now();
      const sb = await cold.create(spec(i));
      await sb.exec(['true']);
      first.push(performance.now() - t0);
      for (let j = 0; j < 3; j++) {
        t0 = performance.now();
        await sb.exec('true');
        later.push(performance.now() - t0);
      }
      t0 = performance.now();
      await sb.destroy();
      destroy.push(performance.now() - t0);
      await new Promise((r) => setTimeout(r, 500)); // the warm pool's refill
      t0 = performance.now();
      const w = await warm.create(spec(i));
      await w.exec(['true']);
      firstWarm.push(performance.now() - t0);
      await w.destroy();
    }
  } finally {
    await cli(['rm', '-f', name]).catch(() => 0);
    await Promise.all([cold.close(), warm.close()]);
  }
  console.log(`\n[docker, one engine] ${samples} samples each`);
  console.log(`  baseline  docker run --rm ... true (CLI)    ${fmt(run)}`);
  console.log(`  create + first exec                         ${fmt(first)}   ${ratio(first, run)}`);
  console.log(`  create + first exec, warm pool of 2         ${fmt(firstWarm)}   ${ratio(firstWarm, run)}`);
  console.log(`  baseline  docker exec <container> true (CLI) ${fmt(execCli)}`);
  console.log(`  later exec (same sandbox)                   ${fmt(later)}   ${ratio(later, execCli)}`);
  console.log(`  destroy                                     ${fmt(destroy)}`);
}

/** VmRSS of a process, bytes. */
function rss(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) * 1024 : 0;
}

async function ownContainers(owner: string): Promise<number> {
  let n = 0;
  for (const sock of [ENGINE_1, ENGINE_2]) {
    const api = new DockerApi(sock);
    try {
      const filters = encodeURIComponent(JSON.stringify({ label: [`rft-endpoints.instance=${owner}`] }));
      n += (await api.call<unknown[]>('GET', `/containers/json?all=true&filters=${filters}`)).body.length;
    } finally {
      await api.close();
    }
  }
  return n;
}

async function burst(label: string, hosts: string): Promise<void> {
  const dataDir = await mkdtemp(join(tmpdir(), 'rft-bench-docker-'));
  const ttlMs = 5_000;
  const srv = await spawnServer(
    {
      RFT_DATA_DIR: dataDir, RFT_API_KEYS: `b:${KEY}`, RFT_RATE_LIMIT: '0', RFT_SANDBOX: 'docker', RFT_DOCKER_HOSTS: hosts,
      RFT_SANDBOX_CAP: String(rollouts + 16), RFT_SANDBOX_QUEUE: String(rollouts * 2), RFT_SANDBOX_QUEUE_TIMEOUT_MS: '600000',
      RFT_SANDBOX_TTL_MS: String(ttlMs), RFT_TOOL_TIMEOUT_MS: '600000', RFT_SANDBOX_EXEC_TIMEOUT_MS: '600000',
      RFT_TOOLS_DIR: join(repoRoot, 'tools'), RFT_GRADERS_DIR: join(repoRoot, 'graders'), RFT_LOG_LEVEL: 'error',
    },
    120_000,
  );
  const pid = srv.proc.pid!;
  const dispatcher = new Agent({ connections: rollouts, headersTimeout: 0, bodyTimeout: 0 });
  let peak = rss(pid);
  const sampler = setInterval(() => {
    try {
      peak = Math.max(peak, rss(pid));
    } catch {
      /* exited */
    }
  }, 50);
  try {
    const b = await runBurst({ url: srv.url, key: KEY, dispatcher, rollouts, calls, tracePrefix: `trace_${label.replace(/\W/g, '_')}` });
    clearInterval(sampler);
    console.log(`\n[burst, ${label}] ${rollouts} new rollouts at once x ${calls} shell calls`);
    for (const line of burstLines(b)) console.log(`  ${line}`);
    console.log(`  server peak RSS ${(peak / 1024 / 1024).toFixed(0)} MB`);
    const owner = instanceIdFor(dataDir);
    const waitStart = performance.now();
    let left = await ownContainers(owner);
    while (left > 0 && performance.now() - waitStart < ttlMs + 120_000) {
      await new Promise((r) => setTimeout(r, 1_000));
      left = await ownContainers(owner);
    }
    console.log(`  containers left ${((performance.now() - waitStart) / 1000).toFixed(1)} s after the burst (TTL ${ttlMs / 1000} s): ${left}`);
  } finally {
    clearInterval(sampler);
    await srv.stop();
    await dispatcher.close();
    await rm(dataDir, { recursive: true, force: true });
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  console.log(`docker bench: ${samples} samples per operation; burst of ${rollouts} rollouts x ${calls} calls; image ${DOCKER_IMAGE}`);
  if (samples > 0) await perOperation(samples);
  if (engines !== 'one') await burst('two engines', `unix://${ENGINE_1}?name=e1,unix://${ENGINE_2}?name=e2`);
  if (engines !== 'two') await burst('one engine', `unix://${ENGINE_1}?name=e1`);
}
