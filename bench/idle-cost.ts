// What an idle sandbox costs the host, per driver: what the default RFT_SANDBOX_CAP is sized from.
// Creates N sandboxes (each has run one command, then idles, as a rollout between calls does) and
// reads, before and after:
//   - the processes they add (count, and their PSS: shared pages split between their users),
//   - the helper processes that grow with them (bwrap: the supervisor; Docker: the engine's dockerd
//     and containerd, and one containerd-shim per container),
//   - the kernel's share (/proc/meminfo: unreclaimable slab, kernel stacks, page tables),
//   - MemAvailable (everything, including the tmpfs pages of their workspaces),
//   - bwrap: the workspace tmpfs's own use and the uid claims.
// MemAvailable is the whole machine's, so other people's work moves it: the per-process and kernel
// figures are the precise ones. Run on a quiet machine.
// With --prepared, the sandboxes run no command: what a warm pool's prepared sandbox costs
// (RFT_SANDBOX_WARM_MAX_MB is divided by it).
// Run: node --conditions=rft-source --import tsx bench/idle-cost.ts [bwrap-sandboxes=200] [docker-sandboxes=40] [--prepared]
import { readdir, readFile, statfs } from 'node:fs/promises';
import { join } from 'node:path';
import { BwrapDriver } from '../src/sandbox/drivers/bwrap/driver.js';
import { DockerDriver } from '../src/sandbox/drivers/docker/driver.js';
import { parseDockerHosts } from '../src/sandbox/drivers/docker/hosts.js';
import { defaultLimits } from '../src/sandbox/workspace/limits.js';
import { UID_MAX, UID_MIN } from '../src/sandbox/host/uids.js';
import type { Sandbox, SandboxDriver } from '../src/sandbox/types.js';
import { DOCKER_IMAGE, driversPresent, tempRoot } from '../test/sandbox/helpers.js';

const args = process.argv.slice(2).filter((a) => a !== '--prepared');
const prepared = process.argv.includes('--prepared');
const nBwrap = Number(args[0] ?? 200);
const nDocker = Number(args[1] ?? 40);
const ENGINE = '/run/rft-engines/1.sock';
const MB = 1024 * 1024;

interface Proc {
  pid: number;
  uid: number;
  comm: string;
  cmdline: string;
  pssKb: number;
}

async function processes(): Promise<Proc[]> {
  const out: Proc[] = [];
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const status = await readFile(`/proc/${name}/status`, 'utf8');
      if (/^State:\s+Z/m.test(status)) continue;
      const uid = Number(/^Uid:\s+(\d+)/m.exec(status)?.[1] ?? -1);
      const comm = /^Name:\s+(.*)$/m.exec(status)?.[1] ?? '';
      const cmdline = (await readFile(`/proc/${name}/cmdline`, 'utf8')).replace(/\0/g, ' ').trim();
      const rollup = await readFile(`/proc/${name}/smaps_rollup`, 'utf8').catch(() => '');
      const pssKb = Number(/^Pss:\s+(\d+) kB/m.exec(rollup)?.[1] ?? 0);
      out.push({ pid: Number(name), uid, comm, cmdline, pssKb });
    } catch {
      /* exited meanwhile */
    }
  }
  return out;
}

async function meminfo(): Promise<Record<string, number>> {
  const m: Record<string, number> = {};
  for (const line of (await readFile('/proc/meminfo', 'utf8')).split('\n')) {
    const x = /^(\w+):\s+(\d+)/.exec(line);
    if (x) m[x[1] as string] = Number(x[2]) * 1024;
  }
  return m;
}

const kernel = (m: Record<string, number>): number => (m.SUnreclaim ?? 0) + (m.KernelStack ?? 0) + (m.PageTables ?? 0);
const per = (bytes: number, n: number): string => `${(bytes / n / 1024).toFixed(0).padStart(6)} KB`;
const sum = (ps: Proc[]): number => ps.reduce((a, p) => a + p.pssKb * 1024, 0);

async function settle(): Promise<void> {
  await new Promise((r) => setTimeout(r, 1_000));
}

async function measure(label: string, n: number, driver: SandboxDriver, pick: { sandboxProcs: (p: Proc) => boolean; helpers: (p: Proc) => boolean }, extra?: () => Promise<string[]>): Promise<void> {
  const sandboxes: Sandbox[] = [];
  try {
    // One first so that helpers (the supervisor, the engine's connections) exist before the baseline.
    const warm = await driver.create({ traceId: 'idle_warm', limits: defaultLimits, labels: {}, files: { 'README.md': 'idle' } });
    sandboxes.push(warm);
    await warm.exec('true');
    await settle();
    const p0 = await processes();
    const m0 = await meminfo();
    for (let i = 0; i < n; i++) {
      const sb = await driver.create({ traceId: `idle_${i}`, limits: defaultLimits, labels: {}, files: { 'README.md': 'idle' } });
      if (!prepared) {
        const r = await sb.exec('echo ok');
        if (r.stdout !== 'ok\n') throw new Error(`sandbox ${i} answered ${JSON.stringify(r)}`);
      }
      sandboxes.push(sb);
    }
    await settle();
    const p1 = await processes();
    const m1 = await meminfo();
    const added = p1.filter((p) => pick.sandboxProcs(p) && !p0.some((q) => q.pid === p.pid));
    const helpers0 = sum(p0.filter(pick.helpers));
    const helpers1 = sum(p1.filter(pick.helpers));
    const byComm = new Map<string, number>();
    for (const p of added) byComm.set(p.comm, (byComm.get(p.comm) ?? 0) + 1);
    console.log(`\n[${label}] ${n} idle sandboxes (${prepared ? 'prepared, no command run' : 'each ran one command'})`);
    console.log(`  processes added         ${added.length} (${(added.length / n).toFixed(2)} per sandbox: ${[...byComm].map(([c, k]) => `${c} x${k}`).join(', ')})`);
    console.log(`  their PSS               ${per(sum(added), n)} per sandbox`);
    console.log(`  helpers' PSS growth     ${per(helpers1 - helpers0, n)} per sandbox  (${(helpers0 / MB).toFixed(1)} -> ${(helpers1 / MB).toFixed(1)} MB)`);
    console.log(`  kernel (slab unreclaimable + stacks + page tables) ${per(kernel(m1) - kernel(m0), n)} per sandbox`);
    console.log(`  MemAvailable drop       ${per((m0.MemAvailable ?? 0) - (m1.MemAvailable ?? 0), n)} per sandbox (whole machine: noisy)`);
    for (const line of (await extra?.()) ?? []) console.log(`  ${line}`);
  } finally {
    await Promise.all(sandboxes.map((s) => s.destroy().catch(() => {})));
    await driver.close?.();
  }
}

const present = await driversPresent();
const tmp = await tempRoot();
const load = (await readFile('/proc/loadavg', 'utf8')).split(' ').slice(0, 3).join(' ');
console.log(`idle-cost bench: bwrap ${nBwrap}, docker ${nDocker} sandboxes; load average ${load}`);
try {
  if (present.bwrap && nBwrap > 0) {
    const root = join(tmp.root, 'bwrap');
    const driver = new BwrapDriver({ sandboxesRoot: root, instanceId: 'bench-idle' });
    await measure(
      'bwrap',
      nBwrap,
      driver,
      { sandboxProcs: (p) => p.uid >= UID_MIN && p.uid < UID_MAX, helpers: (p) => p.cmdline === 'rft-supervisor' && p.uid === 0 },
      async () => {
        let used = 0;
        let inodes = 0;
        let n = 0;
        for (const d of await readdir(root)) {
          if (!d.startsWith('sb_')) continue;
          const s = await statfs(join(root, d, 'fs')).catch(() => null);
          if (!s) continue;
          used += (s.blocks - s.bfree) * s.bsize;
          inodes += s.files - s.ffree;
          n++;
        }
        const claims = (await readdir('/run/rft-endpoints/uids').catch(() => [])).length;
        return [
          `workspace tmpfs in use  ${per(used, Math.max(1, n))} per sandbox, ${(inodes / Math.max(1, n)).toFixed(0)} inodes (${n} tmpfs mounts)`,
          `uid claims on the host  ${claims} (one per sandbox, of ${UID_MAX - UID_MIN})`,
        ];
      },
    );
  }
  if (present.docker && nDocker > 0) {
    const driver = new DockerDriver({ instanceId: `bench-idle-${process.pid}`, image: DOCKER_IMAGE, hosts: parseDockerHosts({ cap: 10_000, hosts: `unix://${ENGINE}` }) });
    await driver.available();
    const enginePid = Number((await readFile('/run/rft-engines/1.pid', 'utf8')).trim());
    await measure('docker, one engine', nDocker, driver, {
      // The containers' own processes (docker-init, sleep, under the sandbox uid or nobody) and their shims.
      sandboxProcs: (p) => p.comm === 'docker-init' || p.cmdline === 'sleep infinity' || p.comm.startsWith('containerd-shim'),
      helpers: (p) => p.pid === enginePid || (p.comm === 'containerd' && p.cmdline.includes('/run/rft-engines/exec-1/')),
    });
  }
} finally {
  await tmp.cleanup();
}
