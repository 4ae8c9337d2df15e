// N concurrent `shell` calls in N warm Docker sandboxes, over the in-container agent
// (src/sandbox/drivers/docker/agent/), against the same burst on bubblewrap (the target: p99 at most
// 3x) and today's one-engine-exec-per-call path on the very same containers (a second handle on each
// container with the agent off), in the same run, rounds alternating. Warm: created, the agent up, one
// call done (bwrap: its sandbox built). A call is what the `shell` tool runs: sandbox.exec(command).
// Run: node --conditions=rft-source --import tsx bench/docker-agent.ts [sandboxes=500] [rounds=3] [--command='echo hi'] [--gvisor]
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { DockerDriver } from '../src/sandbox/drivers/docker/driver.js';
import { parseDockerHosts } from '../src/sandbox/drivers/docker/hosts.js';
import type { DockerSandbox } from '../src/sandbox/drivers/docker/sandbox.js';
import { selectDriver } from '../src/sandbox/select.js';
import { defaultLimits } from '../src/sandbox/workspace/limits.js';
import type { Sandbox, SandboxDriver, SandboxSpec } from '../src/sandbox/types.js';

const args = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const n = Number(args[0] ?? 500);
const rounds = Number(args[1] ?? 3);
const command = process.argv.find((a) => a.startsWith('--command='))?.slice(10) ?? 'echo hi';
const image = process.env.RFT_DOCKER_IMAGE ?? 'rft-endpoints-sandbox:latest';
/** --gvisor: the containers on the runsc engine (.ci/setup-engines.sh's second socket). */
const gvisor = process.argv.includes('--gvisor');
const engine = gvisor ? { hosts: parseDockerHosts({ cap: 100_000, hosts: 'unix:///run/rft-engines/2.sock' }), runtime: 'runsc' } : {};
const label = { 'rft-endpoints.bench': 'docker-agent' };
const limits = { ...defaultLimits, wallTimeoutMs: 120_000 };
const spec = (i: number): SandboxSpec => ({ traceId: `bench_agent_${i}`, limits, labels: label });

/** Runs fn over 0..count-1, `width` at a time. */
async function pool<T>(count: number, width: number, fn: (i: number) => Promise<T>): Promise<T[]> {
  const out: T[] = new Array(count);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(width, count) }, async () => {
      for (let i = next++; i < count; i = next++) out[i] = await fn(i);
    }),
  );
  return out;
}

const pct = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)] ?? NaN;
};

/** One burst: every sandbox's call at once; each call's latency, ms, and failures. */
async function burst(sbs: Sandbox[]): Promise<{ ms: number[]; failed: number; wallMs: number }> {
  const t0 = performance.now();
  let failed = 0;
  const ms = await Promise.all(
    sbs.map(async (sb) => {
      const t = performance.now();
      const r = await sb.exec(command).catch(() => null);
      if (!r || r.exitCode !== 0) failed++;
      return performance.now() - t;
    }),
  );
  return { ms, failed, wallMs: performance.now() - t0 };
}

const base = await mkdtemp(join(tmpdir(), 'rft-bench-agent-'));
await chmod(base, 0o711);
const instanceId = `bench-agent-${process.pid}`;
const docker = new DockerDriver({ instanceId, image, labels: label, warmPool: 0, ...engine });
const plain = new DockerDriver({ instanceId, image, labels: label, warmPool: 0, agent: false, ...engine });
let bwrap: SandboxDriver | null = null;
const made: Sandbox[] = [];
try {
  console.log(`[docker-agent${gvisor ? ', gVisor' : ''}] ${n} sandboxes per kind, ${rounds} rounds, command ${JSON.stringify(command)}, load ${loadavg().map((l) => l.toFixed(1)).join(' ')}`);
  let t = performance.now();
  const agentSbs = await pool(n, 8, async (i) => {
    const sb = await docker.create(spec(i));
    made.push(sb);
    return sb;
  });
  const agents = await Promise.all(agentSbs.map((sb) => (sb as DockerSandbox).channel()));
  const up = agents.filter(Boolean).length;
  console.log(`  created ${n} containers with their agents in ${((performance.now() - t) / 1000).toFixed(1)} s (${up} agents up)`);
  // The same containers, each through a second handle that has no agent: one engine exec per call.
  const execSbs = await Promise.all(agentSbs.map((sb) => plain.attach(sb.traceId, (sb as DockerSandbox).ref, limits)));
  t = performance.now();
  bwrap = await selectDriver('bwrap', { sandboxesRoot: join(base, 'sandboxes'), instanceId });
  const bwrapSbs = await pool(n, 16, async (i) => bwrap!.create(spec(i)));
  console.log(`  created ${n} bwrap sandboxes in ${((performance.now() - t) / 1000).toFixed(1)} s`);
  // Warm: one call each (bwrap builds its sandbox on the first).
  await pool(n, 32, (i) => bwrapSbs[i]!.exec('true'));
  await pool(n, 32, (i) => agentSbs[i]!.exec('true'));
  await pool(n, 16, (i) => execSbs[i]!.exec('true'));
  const kinds: [string, Sandbox[]][] = [
    ['docker, agent', agentSbs],
    ['bwrap', bwrapSbs],
    ['docker, exec per call', execSbs],
  ];
  const all = new Map<string, number[]>(kinds.map(([k]) => [k, []]));
  for (let r = 1; r <= rounds; r++) {
    for (const [kind, sbs] of kinds) {
      const b = await burst(sbs);
      all.get(kind)!.push(...b.ms);
      console.log(
        `  round ${r} ${kind.padEnd(22)} p50 ${pct(b.ms, 50).toFixed(0).padStart(6)} ms  p99 ${pct(b.ms, 99).toFixed(0).padStart(6)} ms  burst ${b.wallMs.toFixed(0).padStart(6)} ms  failed ${b.failed}  load ${loadavg()[0]!.toFixed(1)}`,
      );
      await new Promise((res) => setTimeout(res, 2_000));
    }
  }
  const p99 = (k: string): number => pct(all.get(k)!, 99);
  const p50 = (k: string): number => pct(all.get(k)!, 50);
  console.log(`[docker-agent] all rounds (${n} x ${rounds} calls each)`);
  for (const [k] of kinds) console.log(`  ${k.padEnd(22)} p50 ${p50(k).toFixed(0).padStart(6)} ms  p99 ${p99(k).toFixed(0).padStart(6)} ms`);
  console.log(
    `  agent p99 / bwrap p99 = x${(p99('docker, agent') / p99('bwrap')).toFixed(2)} (target <= 3); agent p99 / exec-per-call p99 = x${(p99('docker, agent') / p99('docker, exec per call')).toFixed(2)}`,
  );
  await Promise.all(bwrapSbs.map((sb) => sb.destroy().catch(() => {})));
} finally {
  await pool(made.length, 16, (i) => made[i]!.destroy().catch(() => {}));
  await docker.reapOrphans().catch(() => 0);
  await docker.close();
  await plain.close();
  await bwrap?.close?.();
  await rm(base, { recursive: true, force: true });
}
