// Where a burst's sandbox creation goes, phase by phase, with N creations at once on the bwrap
// driver's own parts (no HTTP, no store): the host side (uid claim, directories, the tmpfs mount
// through the supervisor), bubblewrap building the sandbox around its holder, the template's copy,
// and the first command; against N bare `bwrap --unshare-all ... true` at once in the same run.
// Run: node --conditions=rft-source --import tsx bench/burst-phases.ts [n=200] [template=examples/coding/tasks/roman/workspace]
import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { osDirArgs } from '../src/sandbox/drivers/bwrap/args.js';
import { BWRAP, BwrapDriver } from '../src/sandbox/drivers/bwrap/driver.js';
import { BwrapRunner } from '../src/sandbox/drivers/bwrap/runner.js';
import type { HostOps } from '../src/sandbox/host/host-ops.js';
import { defaultLimits } from '../src/sandbox/workspace/limits.js';
import type { Supervisor } from '../src/sandbox/drivers/bwrap/supervisor/client.js';
import { createWorkdir, prepareRoot, removeWorkdir, type Workdir } from '../src/sandbox/host/workdir.js';
import { populateWorkspace } from '../src/sandbox/workspace/workspace.js';
import { tempRoot } from '../test/sandbox/helpers.js';

const n = Number(process.argv[2] ?? 200);
const template = resolve(process.argv[3] ?? 'examples/coding/tasks/roman/workspace');

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN;
}
const mean = (xs: number[]): number => xs.reduce((a, b) => a + b, 0) / xs.length;
const fmt = (xs: number[]): string => `mean ${mean(xs).toFixed(1).padStart(7)} ms   p50 ${pct(xs, 50).toFixed(1).padStart(7)}   p99 ${pct(xs, 99).toFixed(1).padStart(7)}`;

function bare(): Promise<number> {
  const t0 = performance.now();
  return new Promise((res, rej) => {
    const c = spawn(BWRAP, ['--unshare-all', '--die-with-parent', '--as-pid-1', ...osDirArgs(), '--', '/usr/bin/true'], { stdio: 'ignore' });
    c.on('error', rej);
    c.on('close', (code) => (code === 0 ? res(performance.now() - t0) : rej(new Error(`bwrap exited ${code}`))));
  });
}

const tmp = await tempRoot();
const driver = new BwrapDriver({ sandboxesRoot: tmp.root, instanceId: 'bench-phases' });
try {
  if (!(await driver.available())) throw new Error('bwrap driver not available');
  await prepareRoot(tmp.root);
  // The driver's internals, as LocalDriver.prepare uses them.
  const internals = driver as unknown as { ops: HostOps; sup(): Promise<Supervisor>; hide: never; seccomp: Buffer };
  const sup = await internals.sup();
  await sup.ready();
  const setup = { hide: internals.hide, seccomp: internals.seccomp, readOnlyMounts: [] };
  const spec = { traceId: 'phases', limits: defaultLimits, labels: { 'rft-endpoints.instance': 'bench-phases' } };

  const phases = { host: [] as number[], build: [] as number[], copy: [] as number[], first: [] as number[], total: [] as number[] };
  const made: { w: Workdir; r: BwrapRunner }[] = [];
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: n }, async () => {
      const a = performance.now();
      const w = await createWorkdir(tmp.root, 'bwrap', spec, internals.ops);
      const b = performance.now();
      // As the driver does: the sandbox is built while the workspace is filled.
      const [r] = await Promise.all([
        BwrapRunner.start(sup, w, setup).then((x) => (phases.build.push(performance.now() - b), x)),
        populateWorkspace(w.ws, { templateDir: template }, { uid: w.meta.uid!, gid: w.meta.uid! }).then(() => phases.copy.push(performance.now() - b)),
      ]);
      const c = performance.now();
      const res = await r.exec(['sh', '-c', 'echo hi'], [], {}, { limits: defaultLimits, timeoutMs: 30_000, maxOutputBytes: 65536, resultChannel: false });
      if (res.stdout !== 'hi\n') throw new Error(`first command answered ${JSON.stringify(res)}`);
      const d = performance.now();
      phases.host.push(b - a);
      phases.first.push(d - c);
      phases.total.push(d - a);
      made.push({ w, r });
    }),
  );
  const wall = performance.now() - t0;
  console.log(`burst phases: ${n} bwrap sandboxes created at once (template ${template.replace(process.cwd() + '/', '')})`);
  console.log(`  host side (uid, dirs, tmpfs mount)  ${fmt(phases.host)}`);
  console.log(`  bubblewrap builds the sandbox       ${fmt(phases.build)}   (in parallel with the copy)`);
  console.log(`  template copy into the workspace    ${fmt(phases.copy)}`);
  console.log(`  first command                       ${fmt(phases.first)}`);
  console.log(`  create + first command              ${fmt(phases.total)}   wall ${wall.toFixed(0)} ms`);
  const t2 = performance.now();
  await Promise.all(made.map(async ({ w, r }) => {
    await r.close();
    await removeWorkdir(w, internals.ops);
  }));
  console.log(`  destroy all                         wall ${(performance.now() - t2).toFixed(0)} ms`);
  // The baseline once the sandboxes are gone (their tmpfs mounts on the host would slow bare bwrap).
  const t1 = performance.now();
  const bares = await Promise.all(Array.from({ length: n }, () => bare()));
  const bareWall = performance.now() - t1;
  console.log(`  baseline: ${n} bare bwrap true at once ${fmt(bares)}   wall ${bareWall.toFixed(0)} ms`);
} finally {
  await driver.close();
  await tmp.cleanup();
}

