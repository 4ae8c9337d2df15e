// Shared setup for sandbox tests: a throwaway sandboxes root that sandbox uids can traverse.
import { chmod, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { DockerDriver } from '../../src/sandbox/drivers/docker/driver.js';
import { parseDockerHosts } from '../../src/sandbox/drivers/docker/hosts.js';
import { defaultLimits } from '../../src/sandbox/workspace/limits.js';
import { DRIVERS, type DriverName } from '../../src/sandbox/drivers/index.js';
import { driverModule, selectDriver } from '../../src/sandbox/select.js';
import type { Sandbox, SandboxDriver, SandboxLimits, SandboxSpec } from '../../src/sandbox/types.js';
import { runLabels } from '../helpers/run-label.js';

export async function tempRoot(): Promise<{ root: string; cleanup(): Promise<void> }> {
  const base = await mkdtemp(join(tmpdir(), 'rft-sbtest-'));
  await chmod(base, 0o711);
  return { root: join(base, 'sandboxes'), cleanup: () => rm(base, { recursive: true, force: true }) };
}

export const testLimits: SandboxLimits = { ...defaultLimits, wallTimeoutMs: 5_000, diskBytes: 32 * 1024 * 1024, maxFileBytes: 8 * 1024 * 1024 };

export function spec(traceId: string, extra: Partial<SandboxSpec> = {}): SandboxSpec {
  return { traceId, limits: testLimits, labels: {}, ...extra };
}

export const DOCKER_IMAGE = process.env.RFT_DOCKER_IMAGE ?? 'rft-endpoints-sandbox:latest';

/** The Docker driver under gVisor: an engine with the runsc runtime (.ci/setup-engines.sh starts one). */
export const GVISOR_ENGINE = process.env.RFT_TEST_GVISOR_ENGINE ?? 'unix:///run/rft-engines/2.sock';

/** A driver of the list (src/sandbox/drivers/index.ts) by name, or gvisor: the Docker driver under runsc. */
export type TestDriver = DriverName | 'gvisor';

/** The drivers the suites run on: every driver of the list, then gvisor. */
export function driverMatrix(): TestDriver[] {
  return [...DRIVERS.map((d) => d.name), 'gvisor'];
}

/** Whether the driver isolates a sandbox from the host (its module says; gvisor does). */
export function isolates(name: TestDriver): boolean {
  return name === 'gvisor' || driverModule(name)?.isolates === true;
}

function gvisorDriver(instanceId: string, warmPool = 0, agent = true): SandboxDriver {
  return new DockerDriver({ instanceId, labels: runLabels, image: DOCKER_IMAGE, hosts: parseDockerHosts({ cap: 1000, hosts: GVISOR_ENGINE }), runtime: 'runsc', ...(warmPool ? { warmPool } : {}), ...(agent ? {} : { agent: false }) });
}

/** Which drivers work on this machine (each of the list probed for real by its own check, and gvisor). */
export async function driversPresent(): Promise<Record<TestDriver, boolean>> {
  const present: Record<string, boolean> = {};
  for (const m of DRIVERS) {
    const d = await m.create({ sandboxesRoot: '/nonexistent', instanceId: 'probe', dockerImage: DOCKER_IMAGE });
    present[m.name] = await d.available();
    await d.close?.();
  }
  const gvisor = gvisorDriver('probe') as DockerDriver;
  // available() checks the engine has the runtime (it refuses with RFT_ERR_DOCKER_RUNTIME when not).
  present.gvisor = await gvisor.available().catch(() => false);
  await gvisor.close();
  return present as Record<TestDriver, boolean>;
}

/** A driver by test name (gvisor: the Docker driver with runtime runsc on GVISOR_ENGINE); `warmPool`: its pool's floor. */
/** `dockerAgent: false`: Docker's (and gvisor's) exec path (RFT_DOCKER_AGENT=false), one engine exec per call. */
export async function makeTestDriver(name: TestDriver, opts: { sandboxesRoot: string; instanceId: string; warmPool?: number; dockerAgent?: boolean }): Promise<SandboxDriver> {
  const { warmPool, dockerAgent, ...o } = opts;
  const warm = warmPool ? { localWarm: warmPool, dockerWarm: warmPool } : {};
  if (name !== 'gvisor') return selectDriver(name, { ...o, dockerImage: DOCKER_IMAGE, dockerLabels: runLabels, ...warm, ...(dockerAgent === false ? { dockerAgent } : {}) });
  const d = gvisorDriver(o.instanceId, warmPool, dockerAgent !== false);
  await d.available();
  return d;
}

/** pids of live (not zombie) processes whose real uid is `uid`. */
export async function liveProcessesOf(uid: number): Promise<number[]> {
  const pids: number[] = [];
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const status = await readFile(`/proc/${name}/status`, 'utf8').catch(() => '');
    const m = /^Uid:\s+(\d+)/m.exec(status);
    if (m && Number(m[1]) === uid && !/^State:\s+Z/m.test(status)) pids.push(Number(name));
  }
  return pids;
}

/** Host pids of live `sleep <marker>` processes (a sandbox's processes are host processes too). */
export async function pidsWith(marker: string): Promise<number[]> {
  const out: number[] = [];
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const cmd = await readFile(`/proc/${name}/cmdline`, 'utf8').catch(() => '');
    const state = await readFile(`/proc/${name}/stat`, 'utf8').catch(() => '');
    if (cmd === `sleep\0${marker}\0` && !/\) Z /.test(state)) out.push(Number(name));
  }
  return out;
}

/** Resolves once `cond` holds (checked every 25 ms); fails after `timeoutMs`. */
export async function until(cond: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** Inside a describe: a driver and one sandbox made from `sandboxSpec`, set up before and removed after the suite. */
/**
 * A driver and one sandbox of it for a suite. `pooled`: the driver keeps a warm pool (issue 24), and
 * the suite's sandbox is one it hands over prepared: a first sandbox starts the pool, and the suite's
 * is made once the pool has one ready (checked: a pool hit).
 */
export function driverWithSandbox(name: TestDriver, sandboxSpec: SandboxSpec, o: { pooled?: boolean } = {}): { driver: SandboxDriver; sb: Sandbox } {
  const ctx = {} as { driver: SandboxDriver; sb: Sandbox; tmp: Awaited<ReturnType<typeof tempRoot>> };
  beforeAll(async () => {
    ctx.tmp = await tempRoot();
    ctx.driver = await makeTestDriver(name, { sandboxesRoot: ctx.tmp.root, instanceId: `${name}-${process.pid}`, ...(o.pooled ? { warmPool: 2 } : {}) });
    if (o.pooled) {
      await (await ctx.driver.create({ ...sandboxSpec, traceId: `${sandboxSpec.traceId}_first` })).destroy();
      await until(async () => (ctx.driver.poolStats?.()?.warm ?? 0) > 0, 120_000);
    }
    ctx.sb = await ctx.driver.create(sandboxSpec);
    if (o.pooled && (ctx.driver.poolStats?.()?.hits ?? 0) === 0) throw new Error(`the ${name} pool did not hand over the suite's sandbox`);
  }, 180_000);
  afterAll(async () => {
    await ctx.sb?.destroy();
    await ctx.driver?.close?.();
    await ctx.tmp?.cleanup();
  });
  return ctx;
}

/** What a sandbox is on this host, whatever its driver: its uid, where its workspace is, whether it is all gone. */
export interface HostView {
  uid: number | null;
  /** The workspace's host path (for Docker, the volume's mount point on the local engine). */
  ws: string;
  /** Resolves when nothing of the sandbox is left (directory, container, volume). */
  gone(): Promise<boolean>;
}

export async function hostView(sb: Sandbox, sandboxesRoot: string): Promise<HostView> {
  if (sb.driver !== 'docker') {
    // A local sandbox's host side, as reaping after a crash reads it: <root>/<id>/meta.json and its
    // workspace. Gone means the whole workdir is gone.
    const { existsSync } = await import('node:fs');
    const { workdirLayout } = await import('../../src/sandbox/host/workdir.js');
    const dir = join(sandboxesRoot, sb.id);
    const meta = JSON.parse(await readFile(join(dir, 'meta.json'), 'utf8')) as { uid: number | null };
    const { ws } = workdirLayout(dir);
    if (!existsSync(ws)) throw new Error(`no workspace at ${ws}: the workdir layout changed`);
    return { uid: meta.uid, ws, gone: async () => !existsSync(dir) };
  }
  const { DockerApi } = await import('../../src/sandbox/drivers/docker/api.js');
  const endpoint = (sb as unknown as { engine: { api: { endpoint: import('../../src/sandbox/drivers/docker/api.js').DockerEndpoint } } }).engine.api.endpoint;
  const api = new DockerApi(endpoint);
  try {
    const filters = encodeURIComponent(JSON.stringify({ label: [`rft-endpoints.sandbox=${sb.id}`] }));
    const [c] = (await api.call<{ Id: string }[]>('GET', `/containers/json?all=true&filters=${filters}`)).body;
    const info = (await api.call<{ Config: { Labels: Record<string, string> }; Mounts: { Name: string; Source: string; Destination: string }[] }>('GET', `/containers/${c?.Id}/json`)).body;
    const vol = info.Mounts.find((m) => m.Destination === '/workspace');
    return {
      uid: Number(info.Config.Labels['rft-endpoints.uid']),
      ws: vol?.Source ?? '',
      gone: async () => {
        const again = new DockerApi(endpoint);
        try {
          const left = (await again.call<unknown[]>('GET', `/containers/json?all=true&filters=${filters}`)).body;
          const volume = await again.call('GET', `/volumes/${vol?.Name}`, undefined, [404]);
          return left.length === 0 && volume.status === 404;
        } finally {
          await again.close();
        }
      },
    };
  } finally {
    await api.close();
  }
}
