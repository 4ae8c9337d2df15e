// A Harbor training step (issue 40): T tasks x N tries start at once, each rollout's sandbox is its
// task's image (built from a Dockerfile on first use), and each makes one call (`cat /marker`, its
// output checked). Three steps on one Docker driver with the warm pool learning (in-process, the
// driver alone: the pool, the builds and the engine are what is measured):
//   1. cold: every image is built (counted: once per image) and every container made on demand;
//   2. the next step, after the trainer's pause: the pool has learned the step per image;
//   3. the baseline, a warm pool's: the same step once the pool holds the whole step, waited for.
// Prints per step the first call's p50/p99 (from the rollout's start to its first call's answer),
// hits/misses, builds, errors; then step 2's p99 over the baseline's (target: within 2x) and the builds
// (target: one per image). Every container and image it makes is removed at the end.
// Run: node --conditions=rft-source --import tsx bench/harbor-step.ts [tasks=8] [tries=16] [pause-ms=20000] [--gvisor]
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DockerDriver } from '../src/sandbox/drivers/docker/driver.js';
import { parseDockerHosts } from '../src/sandbox/drivers/docker/hosts.js';
import { harborSandboxImage } from '../src/harbor/sandbox-spec.js';
import { defaultLimits } from '../src/sandbox/workspace/limits.js';
import type { SandboxImage } from '../src/sandbox/types.js';
import { baseImageOn, makeTask, removeTaskImages } from '../test/harbor/task-folders.js';

const args = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const tasks = Number(args[0] ?? 8);
const tries = Number(args[1] ?? 16);
const pauseMs = Number(args[2] ?? 20_000);
const gvisor = process.argv.includes('--gvisor');
const socket = gvisor ? '/run/rft-engines/2.sock' : '/var/run/docker.sock';

interface StepResult {
  firstCall: number[];
  hits: number;
  misses: number;
  builds: number;
  errors: string[];
  wallMs: number;
}

const pct = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? (s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)] as number) : NaN;
};
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function main(): Promise<void> {
  const base = await baseImageOn(socket);
  if (!base) throw new Error(`no base image on ${socket}`);
  const root = await mkdtemp(join(tmpdir(), 'rft-bench-harbor-'));
  const images: SandboxImage[] = [];
  for (let t = 0; t < tasks; t++) {
    const task = await makeTask({ name: `task${t}`, dockerfile: `FROM ${base}\nUSER root\nWORKDIR /app\nRUN echo task${t}-${process.pid} > /marker\n`, testSh: 'true\n' }, root, 'bench');
    images.push(harborSandboxImage(task));
  }
  const driver = new DockerDriver({
    instanceId: `bench-harbor-${process.pid}`,
    image: 'rft-endpoints-sandbox:latest',
    labels: { 'rft-endpoints.test-run': process.env.RFT_TEST_RUN ?? `bench-harbor-${process.pid}` },
    hosts: parseDockerHosts({ cap: 1000, hosts: `unix://${socket}` }),
    ...(gvisor ? { runtime: 'runsc' } : {}),
    warmPool: 1,
    // The budget holds the whole step (8.5 MB per idle container); back to the floor after 10 min idle.
    warmLearning: { maxMb: Math.ceil((tasks * tries * 8.5 * 3) / 2), idleMs: 600_000, cap: 1000 },
  });
  const limits = { ...defaultLimits, wallTimeoutMs: 60_000 };

  async function step(label: string): Promise<StepResult> {
    const before = driver.poolStats();
    const builds0 = driver.images.builds;
    const started = performance.now();
    const errors: string[] = [];
    const firstCall: number[] = [];
    const sbs = await Promise.all(
      images.flatMap((image, t) =>
        Array.from({ length: tries }, async (_, i) => {
          const t0 = performance.now();
          try {
            const sb = await driver.create({ traceId: `bench_${label}_${t}_${i}`, limits, labels: {}, image });
            const out = await sb.exec('cat /marker');
            if (out.stdout !== `task${t}-${process.pid}\n`) errors.push(`wrong output: ${JSON.stringify(out.stdout.slice(0, 80))}`);
            firstCall.push(performance.now() - t0);
            return sb;
          } catch (e) {
            errors.push((e as Error).message.slice(0, 160));
            return null;
          }
        }),
      ),
    );
    const wallMs = performance.now() - started;
    // The step's rollouts are graded and their sandboxes go (the pool refills for the next step).
    await Promise.all(sbs.map((sb) => sb?.destroy().catch(() => {})));
    const after = driver.poolStats();
    return { firstCall, hits: after.hits - before.hits, misses: after.misses - before.misses, builds: driver.images.builds - builds0, errors, wallMs };
  }

  const warmFor = (): number => driver.poolStats().kinds.filter((k) => k.kind.includes('rft-harbor-env')).reduce((a, k) => a + k.warm, 0);
  const results: [string, StepResult][] = [];
  try {
    await driver.available();
    results.push(['1 cold (builds)', await step('s1')]);
    await sleep(pauseMs);
    console.error(`pool after the pause: ${warmFor()} warm of ${tasks * tries}`);
    results.push(['2 next step (learned)', await step('s2')]);
    // The baseline: a warm pool's, waited for until it holds the whole step.
    const end = Date.now() + 600_000;
    while (warmFor() < tasks * tries && Date.now() < end) await sleep(500);
    console.error(`pool before the baseline: ${warmFor()} warm`);
    results.push(['3 warm pool (baseline)', await step('s3')]);
  } finally {
    await driver.close();
    await removeTaskImages(socket, 'bench').catch(() => 0);
    await rm(root, { recursive: true, force: true });
  }

  const baseP99 = pct(results[2]![1].firstCall, 99);
  console.log(`\nHarbor step: ${tasks} tasks x ${tries} tries on ${gvisor ? 'gVisor' : 'Docker'} (pause ${pauseMs} ms)`);
  console.log('| step | rollouts ok | first call p50 | p99 | p99 vs warm pool | pool hits | misses | builds | step wall | errors |');
  console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
  for (const [name, r] of results) {
    const p99 = pct(r.firstCall, 99);
    console.log(`| ${name} | ${r.firstCall.length} | ${Math.round(pct(r.firstCall, 50))} ms | ${Math.round(p99)} ms | ${(p99 / baseP99).toFixed(2)}x | ${r.hits} | ${r.misses} | ${r.builds} | ${(r.wallMs / 1000).toFixed(1)} s | ${r.errors.length} |`);
  }
  const ratio = pct(results[1]![1].firstCall, 99) / baseP99;
  const builds = results.reduce((a, [, r]) => a + r.builds, 0);
  console.log(`\nstep 2 first-call p99 / warm pool's: ${ratio.toFixed(2)}x (target <= 2x: ${ratio <= 2 ? 'met' : 'NOT met'})`);
  console.log(`image builds: ${builds} for ${tasks} images (target: once per image: ${builds === tasks ? 'met' : 'NOT met'})`);
  for (const [name, r] of results) if (r.errors.length) console.log(`${name} errors (first 3): ${r.errors.slice(0, 3).join(' | ')}`);
}

await main();
