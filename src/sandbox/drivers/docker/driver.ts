// The `docker` driver: one long-lived container per rollout (an idle init), on one of several
// engines (RFT_DOCKER_HOSTS), each exec through the Engine API's exec endpoint. No network
// (NetworkMode none), read-only root, no capabilities, no privilege gain, memory/pids/CPU limits, a
// non-root user, an optional runtime (RFT_DOCKER_RUNTIME=runsc for gVisor). The workspace is a
// tmpfs volume of the container, capped in size and inodes, filled and read through the archive
// endpoints: the engine can be another machine. Containers carry their owner's label, so each
// replica reaps only its own, on every engine.
import { randomInt, randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { readFileSync, statSync } from 'node:fs';
import { errors, isRftError, type RftError } from '../../../errors.js';
import { SLOW_TIMEOUT_MS } from './api.js';
import { DockerEngine } from './engine.js';
import { endpointFor, type DockerHostSpec } from './hosts.js';
import { DockerSandbox } from './sandbox.js';
import { packWorkspace } from './tar.js';
import { SANDBOX_PATH } from '../../host/local-sandbox.js';
import { WORKSPACE_MOUNT } from '../../workspace/paths.js';
import { INSTANCE_LABEL } from '../../host/workdir.js';
import type { Sandbox, SandboxDriver, SandboxLimits, SandboxRef, SandboxSpec } from '../../types.js';

export interface DockerDriverOptions {
  /** Owner label of every container this process creates: its replica id, the same after restarts. */
  instanceId: string;
  image: string;
  /** The engines; without them, one engine at `socketPath` (default /var/run/docker.sock). */
  hosts?: DockerHostSpec[];
  socketPath?: string;
  /** OCI runtime the engines know by this name (runsc for gVisor); the engine's default otherwise. */
  runtime?: string;
  /** Started, empty containers kept per engine for new rollouts (0: none). */
  warmPool?: number;
  /** Extra labels of every container and volume (RFT_DOCKER_LABELS); never in place of this driver's own. */
  labels?: Record<string, string>;
  /** Inodes of the workspace and /tmp tmpfs (default: one per 16 KiB of their size). */
  inodes?: number;
  log?: Logger;
  /** Accepted for the drivers' common options; Docker keeps nothing on the server's disk. */
  sandboxesRoot?: string;
}

export const SANDBOX_LABEL = 'rft-endpoints.sandbox';
export const UID_LABEL = 'rft-endpoints.uid';
const PURPOSE_LABEL = 'rft-endpoints.purpose';
/** The container's idle init runs as nobody, so killing every process of the exec uid spares it. */
const INIT_USER = '65534:65534';
/**
 * Each sandbox runs as its own uid, drawn from a range above bubblewrap's claims (200000-1199999),
 * so per-uid kernel limits (inotify instances, message queues) are not shared between rollouts on
 * one engine host. Drawn at random: a rare collision only shares those limits, never processes
 * (each container has its own PID namespace, and nothing is killed by uid from the host).
 */
const UID_BASE = 1_300_000;
/** Host threads of a gVisor sandbox (its kernel, the ptrace platform's stubs), on top of the process limit. */
const GVISOR_THREADS = 4096;
/** Memory of a gVisor sandbox's kernel, on top of what its processes may use. */
const GVISOR_MEMORY = 256 * 1024 * 1024;
const UID_SPAN = 1_000_000;

interface Warm {
  id: string;
  name: string;
  uid: number;
  poolKey: string;
}

/** What a warm container must match to serve a spec: what is fixed at container creation. */
const poolKey = (s: Pick<SandboxSpec, 'limits' | 'readOnlyMounts'>): string =>
  JSON.stringify([s.limits.memoryBytes, s.limits.maxProcesses, s.limits.maxFileBytes, s.limits.cpuSeconds, s.limits.diskBytes, s.limits.inodes, s.readOnlyMounts ?? []]);

/**
 * The socket this process may not open (EACCES, EPERM), as a coded error that says how to get in:
 * "driver docker is not available" alone sent people looking at the engine, which was fine.
 */
function socketDenied(socketPath: string | undefined, err: unknown): RftError | undefined {
  let cur = err as { code?: unknown; cause?: unknown } | undefined;
  for (let depth = 0; cur && depth < 5 && cur.code !== 'EACCES' && cur.code !== 'EPERM'; depth++) cur = cur.cause as typeof cur;
  if (!socketPath || !cur) return undefined;
  let gid: number | undefined;
  try {
    gid = statSync(socketPath).gid;
  } catch {
    // the folder holding it is closed to us too: the group of the socket cannot be told
  }
  return errors.dockerSocketDenied(socketPath, gid === undefined ? undefined : (groupName(gid) ?? String(gid)));
}

/** The name of a group id, from /etc/group. */
function groupName(gid: number): string | undefined {
  try {
    for (const line of readFileSync('/etc/group', 'utf8').split('\n')) {
      const [name, , id] = line.split(':');
      if (name && Number(id) === gid) return name;
    }
  } catch {
    // no /etc/group: the id is all there is
  }
  return undefined;
}

export class DockerDriver implements SandboxDriver {
  readonly name = 'docker' as const;
  readonly engines: DockerEngine[];
  /** Containers of live sandboxes and warm ones that this process owns (never reaped). */
  private readonly mine = new Set<string>();
  private readonly warm = new Map<DockerEngine, Warm[]>();
  private readonly filling = new Set<DockerEngine>();
  private closed = false;

  constructor(private readonly o: DockerDriverOptions) {
    const specs = o.hosts ?? [{ url: `unix://${o.socketPath ?? '/var/run/docker.sock'}`, name: 'local', cap: Number.MAX_SAFE_INTEGER, socketPath: o.socketPath ?? '/var/run/docker.sock' }];
    this.engines = specs.map((s) => new DockerEngine(s.name, s.cap, endpointFor(s), o.log, s.starts));
  }

  /** True when at least one engine answers and has the image; engines that do not are left out of placement. */
  async available(): Promise<boolean> {
    const ok = await Promise.all(
      this.engines.map(async (e) => {
        try {
          const img = await e.api.call('GET', `/images/${encodeURIComponent(this.o.image)}/json`, undefined, { ok: [404], timeoutMs: 5_000 });
          if (img.status === 200) return await this.runtimeOf(e);
          e.markDown(`image ${this.o.image} is missing`);
        } catch (err) {
          if (isRftError(err)) throw err;
          const denied = socketDenied(e.api.endpoint.socketPath, err);
          if (denied) throw denied;
          e.markDown((err as Error).message);
        }
        return false;
      }),
    );
    if (ok.some(Boolean)) for (const e of this.engines) e.watch();
    return ok.some(Boolean);
  }

  /**
   * An answering engine that does not know RFT_DOCKER_RUNTIME would refuse every container
   * (500 "Unknown runtime" at each creation, a failed call per rollout): a misconfiguration that
   * stops the boot instead, naming the engine and the runtimes it has.
   */
  private async runtimeOf(e: DockerEngine): Promise<true> {
    const runtime = this.o.runtime;
    if (!runtime) return true;
    const info = await e.api.call<{ Runtimes?: Record<string, unknown> }>('GET', '/info', undefined, { timeoutMs: 5_000 });
    const known = Object.keys(info.body.Runtimes ?? {});
    if (!known.includes(runtime)) throw errors.dockerRuntimeMissing(runtime, e.name, known);
    return true;
  }

  /** The answering engine with the most room under its cap. */
  private pick(): DockerEngine {
    let best: DockerEngine | undefined;
    for (const e of this.engines) if (e.up && e.free > 0 && (!best || e.free > best.free)) best = e;
    if (!best) throw errors.sandboxUnavailable(`every Docker engine is full or not answering (${this.engines.length} configured)`);
    return best;
  }

  private engineNamed(name: string): DockerEngine {
    const e = this.engines.find((x) => x.name === name);
    if (!e) throw errors.sandboxFailed(`the sandbox lives on Docker engine "${name}", which this replica does not have in RFT_DOCKER_HOSTS`);
    return e;
  }

  private containerConfig(engine: DockerEngine, id: string, uid: number, limits: SandboxLimits, labels: Record<string, string>, readOnlyMounts: string[]) {
    const l = limits;
    const disk = l.diskBytes ?? 64 * 1024 * 1024;
    const inodes = l.inodes ?? this.o.inodes ?? Math.max(1024, Math.floor(disk / 16384));
    const owner = { [INSTANCE_LABEL]: this.o.instanceId };
    const gvisor = this.o.runtime === 'runsc';
    return {
      Image: this.o.image,
      Cmd: ['sleep', 'infinity'],
      User: INIT_USER,
      WorkingDir: WORKSPACE_MOUNT,
      Env: [`PATH=${SANDBOX_PATH}`, `HOME=${WORKSPACE_MOUNT}`, 'LANG=C.UTF-8'],
      Labels: { ...this.o.labels, ...labels, ...owner, [SANDBOX_LABEL]: id, [UID_LABEL]: String(uid), 'rft-endpoints.created_at': new Date().toISOString() },
      NetworkDisabled: true,
      HostConfig: {
        NetworkMode: 'none',
        ReadonlyRootfs: true,
        CapDrop: ['ALL'],
        SecurityOpt: ['no-new-privileges'],
        Init: true,
        ...(this.o.runtime ? { Runtime: this.o.runtime } : {}),
        // gVisor: the cgroup holds its kernel too, and a command past it would take the whole sandbox
        // down (the kernel is killed, not the command): processes get RLIMIT_DATA, as under bwrap,
        // and the cgroup room for the kernel on top.
        Memory: l.memoryBytes + (gvisor ? GVISOR_MEMORY : 0),
        MemorySwap: l.memoryBytes + (gvisor ? GVISOR_MEMORY : 0),
        // Under gVisor the cgroup counts the sandbox kernel's own threads, not the sandboxed processes:
        // it gets room for those, and the process limit is RLIMIT_NPROC inside gVisor's kernel (per
        // sandbox there; under runc it would count every container's init, all run by nobody).
        PidsLimit: l.maxProcesses + 2 + (gvisor ? GVISOR_THREADS : 0),
        NanoCpus: 1_000_000_000,
        Ulimits: [
          { Name: 'fsize', Soft: l.maxFileBytes, Hard: l.maxFileBytes },
          { Name: 'cpu', Soft: Math.ceil(l.cpuSeconds), Hard: Math.ceil(l.cpuSeconds) },
          { Name: 'nofile', Soft: 1024, Hard: 1024 },
          { Name: 'core', Soft: 0, Hard: 0 },
          ...(gvisor
            ? [
                { Name: 'nproc', Soft: l.maxProcesses + 2, Hard: l.maxProcesses + 2 },
                { Name: 'data', Soft: l.memoryBytes, Hard: l.memoryBytes },
              ]
            : []),
        ],
        // Capped in inodes as well as bytes: empty files cost kernel memory, not pages (see mount.ts).
        Tmpfs: { '/tmp': `rw,nosuid,nodev,size=${disk},nr_inodes=${inodes},mode=1777`, '/dev/shm': `rw,nosuid,nodev,noexec,size=${disk},nr_inodes=${inodes},mode=1777` },
        // Host folders (stdio servers' install dirs) exist only where the engine is this machine's.
        ...(engine.local && readOnlyMounts.length ? { Binds: readOnlyMounts.map((m) => `${m}:${m}:ro`) } : {}),
        // An anonymous volume on a tmpfs: it lives on the engine, the archive endpoints reach it,
        // and it goes with the container (DELETE ?v=true).
        Mounts: [
          {
            Type: 'volume',
            Target: WORKSPACE_MOUNT,
            VolumeOptions: {
              Labels: { ...this.o.labels, ...owner },
              DriverConfig: { Name: 'local', Options: { type: 'tmpfs', device: 'tmpfs', o: `size=${disk},nr_inodes=${inodes},uid=${uid},gid=${uid},mode=0700,nosuid,nodev` } },
            },
          },
        ],
      },
    };
  }

  /** Creates and starts a container on `engine`; removed again if it cannot start. */
  private async createContainer(engine: DockerEngine, limits: SandboxLimits, labels: Record<string, string>, readOnlyMounts: string[] = []): Promise<Warm> {
    const id = `sb_${randomUUID().replace(/-/g, '').slice(0, 16)}`;
    const name = `rft-${id}`;
    const uid = UID_BASE + randomInt(UID_SPAN);
    this.mine.add(name);
    try {
      await engine.creating(async (api) => {
        await api.call('POST', `/containers/create?name=${name}`, this.containerConfig(engine, id, uid, limits, labels, readOnlyMounts), { timeoutMs: SLOW_TIMEOUT_MS });
        await api.call('POST', `/containers/${name}/start`, undefined, { ok: [304], timeoutMs: SLOW_TIMEOUT_MS });
      });
    } catch (e) {
      await this.removeContainer(engine, name).catch(() => {});
      throw e;
    }
    return { id, name, uid, poolKey: poolKey({ limits, readOnlyMounts }) };
  }

  private async removeContainer(engine: DockerEngine, name: string): Promise<void> {
    try {
      await engine.use((api) => api.removeContainer(name));
    } finally {
      this.mine.delete(name);
    }
  }

  async create(spec: SandboxSpec): Promise<Sandbox> {
    const packed = await packWorkspace(spec); // a bad template or inline file fails before any container exists
    const engine = this.pick();
    engine.live++;
    let c: Warm | undefined;
    try {
      const key = poolKey(spec);
      const pool = this.warm.get(engine) ?? [];
      const i = pool.findIndex((w) => w.poolKey === key);
      c = i >= 0 ? pool.splice(i, 1)[0] : undefined;
      this.refill(engine, spec);
      if (spec.readOnlyMounts?.length && !engine.local) {
        this.o.log?.warn({ engine: engine.name }, 'read-only host mounts are skipped on a remote engine: put what they hold in the sandbox image');
      }
      c ??= await this.createContainer(engine, spec.limits, { ...spec.labels, 'rft-endpoints.trace_id': spec.traceId }, spec.readOnlyMounts);
      const w = c;
      if (packed) {
        await engine.use((api) =>
          api.call('PUT', `/containers/${w.name}/archive?path=${encodeURIComponent(WORKSPACE_MOUNT)}`, undefined, {
            raw: { body: packed.stream({ uid: w.uid, gid: w.uid }), contentType: 'application/x-tar' },
            timeoutMs: SLOW_TIMEOUT_MS,
          }),
        );
      }
      return new DockerSandbox({
        id: w.id,
        traceId: spec.traceId,
        engine,
        container: w.name,
        uid: w.uid,
        limits: spec.limits,
        onDestroy: () => {
          engine.live--;
          this.mine.delete(w.name);
        },
      });
    } catch (e) {
      engine.live--;
      if (c) await this.removeContainer(engine, c.name).catch(() => {});
      throw e;
    }
  }

  /** Keeps `warmPool` started containers on `engine` for the next rollouts, in the background. */
  private refill(engine: DockerEngine, like: Pick<SandboxSpec, 'limits' | 'readOnlyMounts'>): void {
    const size = this.o.warmPool ?? 0;
    if (size <= 0 || this.closed || this.filling.has(engine)) return;
    this.filling.add(engine);
    void (async () => {
      const pool = this.warm.get(engine) ?? [];
      this.warm.set(engine, pool);
      while (!this.closed && pool.length < size && engine.up && engine.free > 0) {
        engine.live++;
        try {
          pool.push(await this.createContainer(engine, like.limits, { [PURPOSE_LABEL]: 'warm' }, like.readOnlyMounts));
        } catch {
          engine.live--;
          break; // a failed refill only costs the next rollout the on-demand path
        }
        if (this.closed) await this.drainWarm(engine);
      }
    })().finally(() => this.filling.delete(engine));
  }

  private async drainWarm(engine: DockerEngine): Promise<void> {
    const pool = this.warm.get(engine) ?? [];
    await Promise.all(
      pool.splice(0).map(async (w) => {
        engine.live--;
        await this.removeContainer(engine, w.name).catch(() => {});
      }),
    );
  }

  async attach(traceId: string, ref: SandboxRef, limits: SandboxLimits): Promise<Sandbox> {
    const engine = this.engineNamed(ref.engine);
    const info = await engine.use((api) =>
      api.call<{ Config?: { Labels?: Record<string, string> } }>('GET', `/containers/${ref.container}/json`, undefined, { ok: [404] }),
    );
    const labels = info.body.Config?.Labels ?? {};
    const uid = Number(labels[UID_LABEL]);
    if (info.status === 404 || !Number.isInteger(uid) || labels[SANDBOX_LABEL] === undefined) throw errors.notFound(`sandbox ${ref.container}`);
    return new DockerSandbox({ id: labels[SANDBOX_LABEL], traceId, engine, container: ref.container, uid, limits });
  }

  async remove(ref: SandboxRef): Promise<void> {
    await this.removeContainer(this.engineNamed(ref.engine), ref.container);
  }

  /** Removes this owner's containers (and their left volumes) on every answering engine, but live and kept ones. */
  async reapOrphans(keep: ReadonlySet<string> = new Set()): Promise<number> {
    const owner = encodeURIComponent(JSON.stringify({ label: [`${INSTANCE_LABEL}=${this.o.instanceId}`] }));
    const dangling = encodeURIComponent(JSON.stringify({ label: [`${INSTANCE_LABEL}=${this.o.instanceId}`], dangling: ['true'] }));
    let reaped = 0;
    for (const engine of this.engines.filter((e) => e.up)) {
      try {
        await engine.use(async (api) => {
          const list = await api.call<{ Names: string[]; Labels: Record<string, string> }[]>('GET', `/containers/json?all=true&filters=${owner}`);
          for (const c of list.body) {
            if (c.Labels[INSTANCE_LABEL] !== this.o.instanceId) continue; // never anyone else's
            const name = (c.Names[0] ?? '').replace(/^\//, '');
            if (!name || keep.has(name) || this.mine.has(name)) continue;
            await api.removeContainer(name);
            reaped++;
          }
          const vols = await api.call<{ Volumes: { Name: string }[] | null }>('GET', `/volumes?filters=${dangling}`);
          for (const v of vols.body.Volumes ?? []) await api.call('DELETE', `/volumes/${v.Name}`, undefined, { ok: [404, 409] });
        });
      } catch (e) {
        this.o.log?.warn({ err: e, engine: engine.name }, 'could not reap this engine; it is retried at the next start');
      }
    }
    return reaped;
  }

  /**
   * Other owners with running containers on each answering engine: other servers using it now (or
   * one that crashed and has not restarted: its containers run until it reaps them).
   */
  async neighbours(): Promise<{ engine: string; owner: string; running: number }[]> {
    const filters = encodeURIComponent(JSON.stringify({ label: [INSTANCE_LABEL], status: ['running'] }));
    const out: { engine: string; owner: string; running: number }[] = [];
    for (const engine of this.engines.filter((e) => e.up)) {
      const list = await engine.use((api) => api.call<{ Labels: Record<string, string> }[]>('GET', `/containers/json?filters=${filters}`)).catch(() => null);
      const counts = new Map<string, number>();
      for (const c of list?.body ?? []) {
        const owner = c.Labels[INSTANCE_LABEL];
        if (owner !== undefined && owner !== this.o.instanceId) counts.set(owner, (counts.get(owner) ?? 0) + 1);
      }
      for (const [owner, running] of counts) out.push({ engine: engine.name, owner, running });
    }
    return out;
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(this.engines.map((e) => this.drainWarm(e)));
    await Promise.all(this.engines.map((e) => e.close()));
  }
}
