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
import { DockerStatusError, SLOW_TIMEOUT_MS } from './api.js';
import { DockerEngine } from './engine.js';
import { endpointFor, type DockerHostSpec } from './hosts.js';
import { DockerSandbox } from './sandbox.js';
import { AgentChannel } from './agent/client.js';
import { agentBinary } from './agent/binary.js';
import { packWorkspace } from './tar.js';
import { SANDBOX_PATH } from '../../host/local-sandbox.js';
import { WORKSPACE_MOUNT } from '../../workspace/paths.js';
import { INSTANCE_LABEL } from '../../host/workdir.js';
import type { Sandbox, SandboxDriver, SandboxImage, SandboxLimits, SandboxRef, SandboxSpec, WarmPoolStats } from '../../types.js';
import { DockerAdmin, TASK_KEEPER } from './admin.js';
import { imageTag, TaskImages, type ImageFacts } from './images.js';
import { WarmPool } from '../../pool/warm-pool.js';
import { Prestarted, PrestartQuota, prestartRank } from '../../pool/prestarted.js';
import { poolSizing, type WarmLearning } from '../../pool/settings.js';

export interface DockerDriverOptions {
  /** Owner label of every container this process creates: its replica id, the same after restarts. */
  instanceId: string;
  image: string;
  /** The engines; without them, one engine at `socketPath` (default /var/run/docker.sock). */
  hosts?: DockerHostSpec[];
  socketPath?: string;
  /** OCI runtime the engines know by this name (runsc for gVisor); the engine's default otherwise. */
  runtime?: string;
  /** Started, empty containers kept per engine for new rollouts whatever the arrivals: the pool's floor (0: none). */
  warmPool?: number;
  /** Let the pool learn the trainer's step (../../pool/warm-pool.ts); absent: the floor only. */
  warmLearning?: WarmLearning;
  /** Extra labels of every container and volume (RFT_DOCKER_LABELS); never in place of this driver's own. */
  labels?: Record<string, string>;
  /** Inodes of the workspace and /tmp tmpfs (default: one per 16 KiB of their size). */
  inodes?: number;
  log?: Logger;
  /** Accepted for the drivers' common options; Docker keeps nothing on the server's disk. */
  sandboxesRoot?: string;
  /** Every call through an agent in the container (sandbox.ts, agent/), or one engine exec per call (false). Default true. */
  agent?: boolean;
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

/**
 * What an idle, started sandbox container costs its engine's host, KB (the warm pool's memory budget is
 * divided by it): 30 idle containers, bench/idle-cost.ts (bench/README.md): 3.4 MB of the three
 * processes' PSS (containerd-shim, docker-init, sleep), 0.7 MB of dockerd and containerd, 0.9 MB of
 * kernel memory; 8.5 MB by the host's available memory, page cache included, counted here.
 */
const PREPARED_KB = 8_704;
/**
 * Warm containers a refill starts at once per engine. One at a time, the pool held 19 of a 128-rollout
 * Harbor step after a 20 s pause under gVisor (bench/harbor-step.ts, bench/README.md).
 */
const POOL_PARALLEL = 4;

interface Container {
  id: string;
  name: string;
  uid: number;
  /** A task-image container: its commands' user ("uid:gid"), workdir and grader operations. */
  task?: { user: string; workdir: string; admin: DockerAdmin };
}

/** Labels of a task-image container, for a replica that attaches to it. */
const TASK_USER_LABEL = 'rft-endpoints.task-user';
const TASK_WORKDIR_LABEL = 'rft-endpoints.task-workdir';
/**
 * The capabilities a task-image container keeps (all others dropped): what root needs to act as
 * root on its own files (CHOWN, DAC_OVERRIDE, FOWNER: tasks \`chown\`, write where a file's mode says
 * no) and to kill other users' processes (KILL: the grader's kill of everything the rollout left).
 * None of them reaches past the container's own mount and pid namespaces: no host path is mounted,
 * CAP_DAC_READ_SEARCH (open_by_handle_at) stays dropped, as do SETUID/SETGID (no becoming the init's
 * uid), NET_*, MKNOD, SYS_*.
 */
const TASK_CAPS = ['CHOWN', 'DAC_OVERRIDE', 'FOWNER', 'KILL'];

/** A started, empty container kept for a new rollout, on the engine it was placed on. */
interface Warm extends Container {
  engine: DockerEngine;
  /** What it started while pooled (SandboxSpec.prestarts; the floor's worth per kind), through `host`. */
  prestarted?: Prestarted;
  host?: DockerSandbox;
  key?: string;
  /**
   * Its agent, started while pooled (the rollout's uid; never for a task image, whose user may be root):
   * the rollout's first call goes over it, with no engine exec on the step's path.
   */
  agent?: AgentChannel;
}

/** What a warm container must match to serve a spec: what is fixed at container creation. */
const poolKey = (s: Pick<SandboxSpec, 'limits' | 'readOnlyMounts' | 'image'>): string =>
  JSON.stringify([s.limits.memoryBytes, s.limits.maxProcesses, s.limits.maxFileBytes, s.limits.cpuSeconds, s.limits.diskBytes, s.limits.inodes, s.readOnlyMounts ?? [], ...imageKey(s.image)]);

/** What of a task image is fixed at container creation: a warm container serves only its own image and settings. */
const imageKey = (img: SandboxImage | undefined): unknown[] =>
  img ? [imageTag(img), img.cpus ?? null, img.memoryMb ?? null, img.workdir ?? null, img.user ?? null, img.env ?? {}, img.network ?? null] : [];

/** A pool key for people. */
const describeKind = (s: Pick<SandboxSpec, 'limits' | 'readOnlyMounts' | 'image'>): string => {
  if (s.image) return `image ${imageTag(s.image)}${s.image.memoryMb !== undefined ? `, memory ${s.image.memoryMb} MB` : ''}${s.image.cpus !== undefined ? `, ${s.image.cpus} CPUs` : ''}`;
  const l = s.limits;
  const mb = (b: number | undefined) => (b === undefined ? 'default' : `${Math.round(b / 2 ** 20)} MB`);
  const kind = `memory ${mb(l.memoryBytes)}, ${l.maxProcesses} processes, workspace ${mb(l.diskBytes)}`;
  return s.readOnlyMounts?.length ? `${kind}; read-only ${s.readOnlyMounts.join(', ')}` : kind;
};

/**
 * The engine a new container goes to: of those answering with room under their cap, the one that would
 * finish it first at its measured creation rate (an engine slowed by its host or its queue gets fewer);
 * with equal prospects, the one with the most room. Undefined when none has room.
 */
export function placeCreation<E extends Pick<DockerEngine, 'up' | 'free' | 'expectedCreateMs'>>(engines: readonly E[]): E | undefined {
  let best: E | undefined;
  let bestMs = Infinity;
  for (const e of engines) {
    if (!e.up || e.free <= 0) continue;
    const ms = e.expectedCreateMs();
    if (!best || ms < bestMs || (ms === bestMs && e.free > best.free)) {
      best = e;
      bestMs = ms;
    }
  }
  return best;
}

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

/** A task user's ids: numeric ("uid" or "uid:gid") as given, a name as the image knows it. */
async function taskIds(admin: DockerAdmin, user: string): Promise<{ uid: number; gid: number }> {
  const m = /^(\d+)(?::(\d+))?$/.exec(user);
  if (m) return { uid: Number(m[1]), gid: Number(m[2] ?? m[1]) };
  return admin.ids(user.split(':')[0]);
}

export class DockerDriver implements SandboxDriver {
  readonly name = 'docker' as const;
  readonly engines: DockerEngine[];
  /** Containers of live sandboxes and warm ones that this process owns (never reaped). */
  private readonly mine = new Set<string>();
  private poolInstance: WarmPool<Warm> | null = null;
  /** The manager's gate on the pool's refills (the memory budget's room), given before or after the pool is made. */
  private poolGate: (() => boolean) | undefined;
  /** Which warm containers start the prestarts: the floor's worth per kind. */
  private readonly quota: PrestartQuota;
  /** Task images (SandboxSpec.image) per engine, built once per digest. */
  readonly images: TaskImages;

  constructor(private readonly o: DockerDriverOptions) {
    const specs = o.hosts ?? [{ url: `unix://${o.socketPath ?? '/var/run/docker.sock'}`, name: 'local', cap: Number.MAX_SAFE_INTEGER, socketPath: o.socketPath ?? '/var/run/docker.sock' }];
    this.engines = specs.map((s) => new DockerEngine(s.name, s.cap, endpointFor(s), o.log, s.starts));
    this.quota = new PrestartQuota((o.warmPool ?? 0) * this.engines.length);
    this.images = new TaskImages(o.labels);
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

  /** Where a new container goes (placeCreation); full or silent everywhere: 503. */
  private pick(): DockerEngine {
    const best = placeCreation(this.engines);
    if (!best) throw errors.sandboxUnavailable(`every Docker engine is full or not answering (${this.engines.length} configured)`);
    return best;
  }

  /**
   * The warm pool: started containers for new rollouts, at least `warmPool` per engine, and the next
   * training step once it has seen one (learned from the arrivals, bounded by the engines' caps and the
   * memory budget at PREPARED_KB each). As bwrap's prepared sandboxes, they are on top of the cap, which
   * counts what rollouts hold: a rollout's container is never refused for warm ones, and the budget
   * bounds what they cost. Lazy: the engines are known once the driver is built.
   */
  private get pool(): WarmPool<Warm> {
    // Refills prepare POOL_PARALLEL containers at once per engine (each engine bounds its own creations: engine.ts).
    const sizing = { ...poolSizing((this.o.warmPool ?? 0) * this.engines.length, this.o.warmLearning, PREPARED_KB), parallel: POOL_PARALLEL * this.engines.length };
    this.poolInstance ??= new WarmPool(sizing, {
      make: (spec) => this.makeWarm(spec),
      discard: (w) => {
        this.leaveQuota(w);
        return this.discardWarm(w);
      },
      rank: (w, spec) => prestartRank(w, spec),
      taken: (w) => this.leaveQuota(w),
      key: poolKey,
      id: (w) => w.name,
      describe: describeKind,
    });
    if (this.poolGate) this.poolInstance.gate(this.poolGate);
    return this.poolInstance;
  }

  gatePool(mayPrepare: () => boolean): void {
    this.poolGate = mayPrepare;
    this.poolInstance?.gate(mayPrepare);
  }

  shedPool(n: number): number {
    return this.poolInstance?.shed(n) ?? 0;
  }

  private async makeWarm(spec: SandboxSpec): Promise<Warm> {
    const engine = this.pick();
    const c = await this.createContainer(engine, spec.limits, { [PURPOSE_LABEL]: 'warm' }, spec.readOnlyMounts, spec.image);
    // (one that does not come up leaves the rollout to start its own, as without the pool)
    const agent = c.task || this.o.agent === false ? undefined : await AgentChannel.start(engine, c.name, `${c.uid}:${c.uid}`, await agentBinary()).catch(() => undefined);
    try {
      return await this.makeWarmPrestarts(spec, { ...c, engine, ...(agent ? { agent } : {}) });
    } catch (e) {
      agent?.close();
      throw e;
    }
  }

  private async makeWarmPrestarts(spec: SandboxSpec, c: Warm): Promise<Warm> {
    const engine = c.engine;
    const key = poolKey(spec);
    if (!this.quota.reserve(key, spec)) return c;
    // Started through the container's own sandbox, which the rollout's takes over (its spawned processes).
    const host = new DockerSandbox({ id: c.id, traceId: '(pooled)', engine, container: c.name, uid: c.uid, limits: spec.limits, ...(c.task ? { task: c.task } : {}) });
    const prestarted = await Prestarted.start(spec.prestarts!, (p) => host.spawn(p.argv, { ...(p.cwd !== undefined ? { cwd: p.cwd } : {}), ...(p.env ? { env: p.env } : {}) }));
    if (prestarted.size > 0) return { ...c, prestarted, host, key };
    this.quota.release(key);
    return c;
  }

  private leaveQuota(w: Warm): void {
    if (w.prestarted && w.key !== undefined) this.quota.release(w.key);
  }

  private async discardWarm(w: Warm): Promise<void> {
    w.agent?.close();
    await this.removeContainer(w.engine, w.name);
  }

  /** The warm pool's state (empty before the first sandbox). */
  poolStats(): WarmPoolStats {
    return this.pool.stats();
  }

  private engineNamed(name: string): DockerEngine {
    const e = this.engines.find((x) => x.name === name);
    if (!e) throw errors.sandboxFailed(`the sandbox lives on Docker engine "${name}", which this replica does not have in RFT_DOCKER_HOSTS`);
    return e;
  }

  /**
   * A task image's container (SandboxSpec.image: a Harbor task's). Unlike the server's own image, its
   * root filesystem is writable and its commands usually run as root, because the task's image and
   * tests expect both. It holds because the container still has nothing to escape with: no network
   * (NetworkMode none unless the server names a network, RFT_HARBOR_NETWORK), every capability dropped
   * but TASK_CAPS (root acting on its own files, and killing), no-new-privileges (no setuid gain), the
   * pids, memory and CPU limits and rlimits of every sandbox, no host path mounted, and the same
   * runtime (gVisor's kernel under runsc). Its disk is the engine's writable layer: a file is capped by
   * RLIMIT_FSIZE, the total is not (the overlay on ext4 has no quota; Harbor's Docker runner enforces
   * none either; docs: storage_mb); /tmp is a capped tmpfs. Its init and keeper (admin.ts:
   * TASK_KEEPER, an idle shell that kills every other process on SIGUSR1) run as root; admin.ts tells
   * them apart from the rollout's processes by session (every exec starts a session of its own), not by user.
   */
  private taskConfig(id: string, uid: number, limits: SandboxLimits, labels: Record<string, string>, img: SandboxImage, facts: ImageFacts, workdir: string, user: string) {
    const l = limits;
    const gvisor = this.o.runtime === 'runsc';
    const memory = img.memoryMb !== undefined ? img.memoryMb * 2 ** 20 : l.memoryBytes;
    const disk = l.diskBytes ?? 64 * 1024 * 1024;
    const inodes = l.inodes ?? this.o.inodes ?? Math.max(1024, Math.floor(disk / 16384));
    const owner = { [INSTANCE_LABEL]: this.o.instanceId };
    return {
      Image: facts.tag,
      Entrypoint: ['/bin/sh', '-c', TASK_KEEPER, 'rft-keeper'],
      Cmd: [],
      // The keeper idles reading its stdin: a pipe the engine keeps open and never writes.
      OpenStdin: true,
      StdinOnce: false,
      // Root: an exec as root gets its capabilities only in a container whose own user is root.
      User: '0:0',
      WorkingDir: workdir,
      Env: Object.entries(img.env ?? {}).map(([k, v]) => `${k}=${v}`),
      Labels: {
        ...this.o.labels,
        ...labels,
        ...owner,
        [SANDBOX_LABEL]: id,
        [UID_LABEL]: String(uid),
        [TASK_USER_LABEL]: user,
        [TASK_WORKDIR_LABEL]: workdir,
        'rft-endpoints.created_at': new Date().toISOString(),
      },
      NetworkDisabled: img.network === undefined,
      HostConfig: {
        NetworkMode: img.network ?? 'none',
        ReadonlyRootfs: false,
        CapDrop: ['ALL'],
        CapAdd: TASK_CAPS,
        SecurityOpt: ['no-new-privileges'],
        Init: true,
        ...(this.o.runtime ? { Runtime: this.o.runtime } : {}),
        Memory: memory + (gvisor ? GVISOR_MEMORY : 0),
        MemorySwap: memory + (gvisor ? GVISOR_MEMORY : 0),
        PidsLimit: l.maxProcesses + 2 + (gvisor ? GVISOR_THREADS : 0),
        NanoCpus: Math.round((img.cpus ?? 1) * 1e9),
        Ulimits: [
          { Name: 'fsize', Soft: l.maxFileBytes, Hard: l.maxFileBytes },
          { Name: 'nofile', Soft: 1024, Hard: 1024 },
          { Name: 'core', Soft: 0, Hard: 0 },
          ...(gvisor ? [{ Name: 'nproc', Soft: l.maxProcesses + 2, Hard: l.maxProcesses + 2 }] : []),
        ],
        // /tmp capped as every sandbox's (bytes and inodes): what fills it cannot fill the engine's disk.
        Tmpfs: { '/tmp': `rw,nosuid,nodev,size=${disk},nr_inodes=${inodes},mode=1777` },
      },
    };
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

  /**
   * Creates and starts a container on `engine`; removed again if it cannot start. A task image the engine
   * no longer has (removed since it was built or found: an operator's prune) is found or built again, once.
   */
  private async createContainer(engine: DockerEngine, limits: SandboxLimits, labels: Record<string, string>, readOnlyMounts: string[] = [], image?: SandboxImage): Promise<Container> {
    try {
      return await this.createOnce(engine, limits, labels, readOnlyMounts, image);
    } catch (e) {
      if (!image || !(e instanceof DockerStatusError) || e.dockerStatus !== 404 || e.path !== '/containers/create') throw e;
      this.images.forget(engine, image);
      return this.createOnce(engine, limits, labels, readOnlyMounts, image);
    }
  }

  private async createOnce(engine: DockerEngine, limits: SandboxLimits, labels: Record<string, string>, readOnlyMounts: string[], image: SandboxImage | undefined): Promise<Container> {
    const id = `sb_${randomUUID().replace(/-/g, '').slice(0, 16)}`;
    const name = `rft-${id}`;
    // A task image: built (once per digest and engine) before the container; its workdir and user are the image's unless the task says.
    const facts = image ? await this.images.ensure(engine, image) : undefined;
    const workdir = image?.workdir ?? facts?.workdir ?? '/';
    const user = image?.user ?? facts?.user ?? '0';
    const uid = facts ? 0 : UID_BASE + randomInt(UID_SPAN);
    this.mine.add(name);
    try {
      const config = image && facts ? this.taskConfig(id, uid, limits, labels, image, facts, workdir, user) : this.containerConfig(engine, id, uid, limits, labels, readOnlyMounts);
      await engine.creating(async (api) => {
        await api.call('POST', `/containers/create?name=${name}`, config, { timeoutMs: SLOW_TIMEOUT_MS });
        await api.call('POST', `/containers/${name}/start`, undefined, { ok: [304], timeoutMs: SLOW_TIMEOUT_MS });
      });
      if (!facts) return { id, name, uid };
      const admin = new DockerAdmin({ engine, container: name, workdir });
      const ids = await taskIds(admin, user);
      return { id, name, uid: ids.uid, task: { user: `${ids.uid}:${ids.gid}`, workdir, admin } };
    } catch (e) {
      await this.removeContainer(engine, name).catch(() => {});
      throw e;
    }
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
    const pool = this.pool;
    let warm = pool.take(spec);
    // A taker that claims none (a grading sandbox) gets none running.
    if (warm?.prestarted && !spec.prestarts?.length) await warm.prestarted.stop();
    if (warm && (!warm.engine.up || warm.engine.free <= 0)) {
      // its engine is silent, or full of rollouts since it was made: another engine's new one instead
      void this.discardWarm(warm).catch(() => {});
      warm = null;
    }
    let c: Container | undefined = warm ?? undefined;
    let engine: DockerEngine;
    try {
      engine = warm?.engine ?? this.pick();
    } catch (e) {
      pool.release(spec);
      throw e;
    }
    engine.live++;
    const unhold = engine.events.hold(); // its oom, if any, is seen as it happens (events.ts)
    try {
      if (spec.readOnlyMounts?.length && !engine.local) {
        this.o.log?.warn({ engine: engine.name }, 'read-only host mounts are skipped on a remote engine: put what they hold in the sandbox image');
      }
      c ??= await this.createContainer(engine, spec.limits, { ...spec.labels, 'rft-endpoints.trace_id': spec.traceId }, spec.readOnlyMounts, spec.image);
      const w = c;
      if (packed && !w.task) {
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
        // A task image runs as its task's user (often root), where the agent does not run: the exec path.
        agent: w.task || this.o.agent === false ? false : 'eager',
        ...(warm?.agent ? { agentChannel: warm.agent } : {}),
        gvisor: this.o.runtime === 'runsc',
        ...(w.task ? { task: w.task } : {}),
        onDestroy: () => {
          engine.live--;
          unhold();
          this.mine.delete(w.name);
          pool.release(spec);
        },
        ...(warm?.host && spec.prestarts?.length ? { from: warm.host, ...(warm.prestarted ? { prestarted: warm.prestarted } : {}) } : {}),
      });
    } catch (e) {
      engine.live--;
      unhold();
      pool.release(spec);
      if (c) await this.removeContainer(engine, c.name).catch(() => {});
      throw e;
    }
  }

  async attach(traceId: string, ref: SandboxRef, limits: SandboxLimits): Promise<Sandbox> {
    const engine = this.engineNamed(ref.engine);
    const info = await engine.use((api) =>
      api.call<{ Config?: { Labels?: Record<string, string> } }>('GET', `/containers/${ref.container}/json`, undefined, { ok: [404] }),
    );
    const labels = info.body.Config?.Labels ?? {};
    const uid = Number(labels[UID_LABEL]);
    if (info.status === 404 || !Number.isInteger(uid) || labels[SANDBOX_LABEL] === undefined) throw errors.notFound(`sandbox ${ref.container}`);
    const workdir = labels[TASK_WORKDIR_LABEL];
    const user = labels[TASK_USER_LABEL];
    const task = workdir !== undefined && user !== undefined ? await this.attachTask(engine, ref.container, workdir, user) : undefined;
    return new DockerSandbox({
      id: labels[SANDBOX_LABEL], traceId, engine, container: ref.container, uid: task?.uid ?? uid, limits, gvisor: this.o.runtime === 'runsc', onDestroy: engine.events.hold(),
      ...(task || this.o.agent === false ? { agent: false as const } : {}),
      ...(task ? { task: task.task } : {}),
    });
  }

  /** A task-image container another replica made: its user's ids are asked of the image again. */
  private async attachTask(engine: DockerEngine, container: string, workdir: string, user: string): Promise<{ uid: number; task: NonNullable<Container['task']> }> {
    const admin = new DockerAdmin({ engine, container, workdir });
    const ids = await taskIds(admin, user);
    return { uid: ids.uid, task: { user: `${ids.uid}:${ids.gid}`, workdir, admin } };
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
    await this.poolInstance?.close();
    await Promise.all(this.engines.map((e) => e.close()));
  }
}
