// Issue 40: "where it is cheap, a task image's root filesystem can also serve bubblewrap sandboxes: measure it
// before you build it". Measures, on one task image, what that path would cost against the one built (a
// container of the image per rollout):
//   1. once per image: the image's root filesystem exported from the engine (a created container's
//      /export) and unpacked into a directory, its time and size;
//   2. per rollout: an overlay of that directory (upper and work dirs on a tmpfs: each rollout writes its own
//      copy) mounted on the host, bubblewrap started on it (`--bind merged /`, the bwrap driver's namespaces),
//      the first command run, then unmounted; against
//   3. per rollout, the built path: a container of the image created, started and its first command run
//      through one engine exec (`docker run`'s work, its removal timed apart);
//   4. the floor: bare `bwrap --unshare-all --ro-bind / / true` on the host's own root.
// Each one at a time (N rollouts) and as a burst (B at once). Root only (the overlay mount), like the bwrap
// driver's supervisor.
//   node --conditions=rft-source --import tsx bench/harbor-rootfs.ts [n=30] [burst=32] [image=rft-endpoints-sandbox:latest]
import { execFile, spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { promisify } from 'node:util';
import { pct } from './lib/burst.js';
import { DockerApi } from '../src/sandbox/drivers/docker/api.js';
import { dockerExec } from '../src/sandbox/drivers/docker/exec.js';

const run = promisify(execFile);
const n = Number(process.argv[2] ?? 30);
const burst = Number(process.argv[3] ?? 32);
const image = process.argv[4] ?? 'rft-endpoints-sandbox:latest';
const COMMAND = 'echo work > /tmp/w; cat /etc/debian_version';
if (process.getuid?.() !== 0) throw new Error('root only: the overlay is mounted on the host');

const api = new DockerApi('/var/run/docker.sock');
const root = await mkdtemp(join(tmpdir(), 'rft-harbor-rootfs-'));
const lower = join(root, 'lower');
const scratch = join(root, 'scratch');
await mkdir(lower);
await mkdir(scratch);
await run('mount', ['-t', 'tmpfs', '-o', 'size=2g', 'rft-bench', scratch]);

const fmt = (xs: number[]): string => `p50 ${pct(xs, 50).toFixed(1).padStart(7)} ms  p99 ${pct(xs, 99).toFixed(1).padStart(7)} ms`;

async function exportRootfs(): Promise<{ ms: number; mb: number }> {
  const t = performance.now();
  const created = await api.call<{ Id: string }>('POST', '/containers/create', { Image: image, Cmd: ['true'], NetworkDisabled: true, HostConfig: { NetworkMode: 'none' } });
  const id = created.body.Id;
  try {
    const tar = spawn('tar', ['-x', '-f', '-', '-C', lower], { stdio: ['pipe', 'ignore', 'inherit'] });
    const done = new Promise<void>((res, rej) => tar.on('close', (code) => (code === 0 ? res() : rej(new Error(`tar ${code}`)))));
    const res = await fetchExport(id);
    for await (const chunk of res) tar.stdin.write(chunk as Buffer);
    tar.stdin.end();
    await done;
  } finally {
    await api.call('DELETE', `/containers/${id}?force=true`, undefined, { ok: [404] });
  }
  const ms = performance.now() - t;
  const du = await run('du', ['-sm', lower]);
  return { ms, mb: Number(du.stdout.split('\t')[0]) };
}

async function fetchExport(id: string): Promise<AsyncIterable<unknown>> {
  const { request, Agent } = await import('undici');
  const res = await request(`http://localhost/v1.41/containers/${id}/export`, { dispatcher: new Agent({ connect: { socketPath: '/var/run/docker.sock' } }) });
  if (res.statusCode !== 200) throw new Error(`export: ${res.statusCode}`);
  return res.body;
}

/** One rollout on the exported root: overlay mounted, bwrap on it, first command, unmounted. */
async function overlayRollout(i: number): Promise<number> {
  const t = performance.now();
  const dir = join(scratch, `r${i}`);
  const [upper, work, merged] = ['upper', 'work', 'merged'].map((d) => join(dir, d)) as [string, string, string];
  await Promise.all([upper, work, merged].map((d) => mkdir(d, { recursive: true })));
  await run('mount', ['-t', 'overlay', 'overlay', '-o', `lowerdir=${lower},upperdir=${upper},workdir=${work}`, merged]);
  try {
    const out = await run('bwrap', [
      '--unshare-all', '--die-with-parent', '--new-session', '--bind', merged, '/', '--proc', '/proc', '--dev', '/dev', '--tmpfs', '/tmp',
      '--uid', '65534', '--gid', '65534', '--', '/bin/sh', '-c', COMMAND,
    ]);
    if (!/\d/.test(out.stdout)) throw new Error(`overlay rollout ${i}: ${out.stdout}`);
    return performance.now() - t;
  } finally {
    await run('umount', [merged]);
    await rm(dir, { recursive: true, force: true });
  }
}

/** One rollout on the built path: a container of the image created, started, its first command through one exec. */
async function containerRollout(i: number, removals: number[]): Promise<number> {
  const t = performance.now();
  const name = `rft-bench-rootfs-${process.pid}-${i}`;
  await api.call('POST', `/containers/create?name=${name}`, { Image: image, Entrypoint: ['sleep'], Cmd: ['infinity'], User: '65534:65534', NetworkDisabled: true, HostConfig: { NetworkMode: 'none', Init: true, CapDrop: ['ALL'] } });
  await api.call('POST', `/containers/${name}/start`, undefined, { ok: [304] });
  const out = await dockerExec(api, { container: name, argv: ['/bin/sh', '-c', COMMAND], env: [], workingDir: '/', user: '65534:65534', stdin: '', maxOutputBytes: 4096 }, { stop: () => {} });
  const ms = performance.now() - t;
  if (out.exitCode !== 0) throw new Error(`container rollout ${i}: ${out.exitCode} ${out.stderr.toString()}`);
  const r = performance.now();
  await api.call('DELETE', `/containers/${name}?force=true`, undefined, { ok: [404] });
  removals.push(performance.now() - r);
  return ms;
}

async function bareBwrap(): Promise<number> {
  const t = performance.now();
  await run('bwrap', ['--unshare-all', '--die-with-parent', '--ro-bind', '/', '/', '--proc', '/proc', '--dev', '/dev', '--', '/bin/true']);
  return performance.now() - t;
}

async function oneAtATime(f: (i: number) => Promise<number>): Promise<number[]> {
  const xs: number[] = [];
  for (let i = 0; i < n; i++) xs.push(await f(i));
  return xs;
}
const atOnce = async (f: (i: number) => Promise<number>, base: number): Promise<{ xs: number[]; wall: number }> => {
  const t = performance.now();
  const xs = await Promise.all(Array.from({ length: burst }, (_, i) => f(base + i)));
  return { xs, wall: performance.now() - t };
};

try {
  const load = (await run('cat', ['/proc/loadavg'])).stdout.split(' ').slice(0, 3).join(' ');
  console.log(`harbor rootfs bench: image ${image}, ${n} rollouts one at a time, bursts of ${burst}; load ${load}`);
  const exp = await exportRootfs();
  console.log(`  once per image: export + unpack ${exp.ms.toFixed(0)} ms, ${exp.mb} MB on the host's disk`);
  const removals: number[] = [];
  // Warm-up of each path (page cache, the engine's image layers).
  await overlayRollout(-1);
  await containerRollout(-1, []);
  const ov = await oneAtATime(overlayRollout);
  const ct = await oneAtATime((i) => containerRollout(i, removals));
  const bare = await oneAtATime(() => bareBwrap());
  console.log(`  one at a time: overlay + bwrap + first command   ${fmt(ov)}`);
  console.log(`                 container create + start + exec  ${fmt(ct)}  (its removal ${fmt(removals)})`);
  console.log(`                 bare bwrap true on the host root ${fmt(bare)}`);
  const ovB = await atOnce(overlayRollout, 1_000);
  const ctB = await atOnce((i) => containerRollout(i, removals), 2_000);
  const bareB = await atOnce(() => bareBwrap(), 0);
  console.log(`  ${burst} at once:   overlay + bwrap + first command   ${fmt(ovB.xs)}  wall ${ovB.wall.toFixed(0)} ms`);
  console.log(`                 container create + start + exec  ${fmt(ctB.xs)}  wall ${ctB.wall.toFixed(0)} ms`);
  console.log(`                 bare bwrap true on the host root ${fmt(bareB.xs)}  wall ${bareB.wall.toFixed(0)} ms`);
  console.log(`  overlay path against the container path: one at a time x${(pct(ov, 50) / pct(ct, 50)).toFixed(2)} at p50, x${(pct(ov, 99) / pct(ct, 99)).toFixed(2)} at p99; ` +
    `${burst} at once x${(ovB.wall / ctB.wall).toFixed(2)} wall`);
} finally {
  await run('umount', [scratch]).catch(() => undefined);
  await rm(root, { recursive: true, force: true });
  await api.close();
}
