// The Sandbox interface: one isolated workspace per rollout. Drivers (bwrap, docker, process)
// implement SandboxDriver; the manager owns lifecycle (lazy create, sharing, TTL, caps, reaping).
import type { Readable, Writable } from 'node:stream';

/**
 * A dataset row as the sandbox reads it: only its `sandbox` field ({template?, files?, hidden?},
 * workspace/workspace.ts) is read.
 */
export type SandboxItem = Readonly<Record<string, unknown>>;

/**
 * Where the process that made each rollout's sandbox is recorded (the Store implements it): a
 * rollout whose sandbox an earlier process made gets RFT_ERR_SANDBOX_LOST (manager/manager.ts).
 */
export interface SandboxHistory {
  /** Records `boot` as the maker of the rollout's sandbox unless one is recorded; returns the recorded boot. */
  claimSandbox(traceId: string, boot: string, now: number): Promise<string>;
  /** The boot claimSandbox recorded for the rollout, if any. */
  sandboxBoot(traceId: string): Promise<string | undefined>;
}

export interface SandboxLimits {
  /** CPU seconds per exec (RLIMIT_CPU or cgroup cpu quota). */
  cpuSeconds: number;
  /** Address space / memory cap in bytes. */
  memoryBytes: number;
  /** Max processes/threads inside the sandbox. */
  maxProcesses: number;
  /** Max size of one file written, bytes (RLIMIT_FSIZE). */
  maxFileBytes: number;
  /** Default wall-clock timeout per exec, ms. */
  wallTimeoutMs: number;
  /** Cap on each of stdout/stderr kept per exec, bytes. */
  maxOutputBytes: number;
  /** Size of the workspace (and of /tmp inside bwrap), bytes; enforced with a tmpfs when the server runs as root. */
  diskBytes?: number;
  /** Files and directories the sandbox may create, on each of its tmpfs (workspace, /tmp, /dev/shm). */
  inodes?: number;
}

/** How much of a workspace a copy takes (workspace/copy-out.ts). */
export interface CopyBounds {
  /** Bytes of regular files copied at most. */
  maxBytes: number;
  /** Entries (files, directories, links) copied at most. */
  maxEntries: number;
  /** Directories nested deeper than this are not entered. */
  maxDepth: number;
  /** Entries whose workspace-relative path is longer (UTF-8 bytes) are skipped. */
  maxPathBytes: number;
}

export interface CopyReport {
  files: number;
  bytes: number;
  /** What was left out and why ("p: a FIFO"), the first SKIPPED_LISTED of them. */
  skipped: string[];
  skippedCount: number;
}

export interface ExecOptions {
  stdin?: string | Buffer;
  timeoutMs?: number;
  /** Working directory relative to the workspace root. */
  cwd?: string;
  env?: Record<string, string>;
  maxOutputBytes?: number;
  signal?: AbortSignal;
  /**
   * Give the command a private result channel: a descriptor whose number is in $RFT_RESULT_FD, held
   * by the command alone (no other process in the sandbox has it, and children only get it if the
   * command passes it on). What it writes there is `ExecResult.result`. This is how a grader's
   * runner reports a verdict the code it runs cannot forge (see graders/_unit_tests/runner.py).
   */
  resultChannel?: boolean;
}

export interface ExecResult {
  exitCode: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
  stdoutTruncated: boolean;
  stderrTruncated: boolean;
  /** What the command wrote to its result channel (only with `resultChannel`). */
  result?: string;
  timedOut: boolean;
  durationMs: number;
}

/** Options of a long-running process started with Sandbox.spawn. */
export interface SpawnOptions {
  /** Working directory relative to the workspace root. */
  cwd?: string;
  env?: Record<string, string>;
}

/**
 * A long-running process inside a sandbox (a stdio server, for instance), with streaming stdin,
 * stdout and stderr. It runs under the same isolation and limits as an exec (namespaces, uid,
 * rlimits, no network) but has no wall-clock timeout: it lives until it exits, `kill()` is called,
 * or its sandbox is destroyed, whichever comes first.
 */
/** How a spawned process ended. */
export interface ProcessExit {
  exitCode: number | null;
  signal: string | null;
}

export interface SandboxProcess {
  readonly stdin: Writable;
  readonly stdout: Readable;
  readonly stderr: Readable;
  /** Settles once the process has exited (never rejects). */
  readonly exited: Promise<ProcessExit>;
  /**
   * Once it has exited: the error a call on its sandbox answers when it ended because its sandbox did,
   * not by its own doing or a kill() (RFT_ERR_SANDBOX_LOST or _INTERRUPTED, 503: ours;
   * _ENDED_BY_ROLLOUT, 410: the rollout's), else undefined. For whoever reports its end to the model,
   * which reports this instead. Apart from `exited`, which stays prompt: telling may take an exec.
   */
  endedBySandbox?(): Promise<Error | undefined>;
  /** Kills the process and every process it started; resolves once it has exited. */
  kill(): Promise<void>;
}

export interface FileEntry {
  path: string;
  type: 'file' | 'dir' | 'symlink' | 'other';
  size: number;
  /** A component of the name is not UTF-8 and `path` shows it escaped (paths.ts shownName). */
  escaped?: true;
}

/** Where a sandbox lives, for another replica to open it: an engine (by its configured name) and a container. */
export interface SandboxRef {
  engine: string;
  container: string;
}

export interface Sandbox {
  readonly id: string;
  readonly driver: string;
  readonly traceId: string;
  /** Set by drivers whose sandboxes any replica can reach (docker); absent for host-bound ones. */
  readonly ref?: SandboxRef | undefined;
  /** argv runs as is; a string runs under `sh -c`. Never throws for the command's own failure. */
  exec(command: string | string[], opts?: ExecOptions): Promise<ExecResult>;
  /** Starts a long-running argv (see SandboxProcess); destroy() kills whatever is still running. */
  spawn(argv: string[], opts?: SpawnOptions): Promise<SandboxProcess>;
  /** Runs `work` as activity of this sandbox: the inactivity TTL does not run out while it does (a call to a spawned server). */
  hold<T>(work: () => Promise<T>): Promise<T>;
  /** Paths are relative to the workspace root; escapes (.., absolute, symlinks) fail with RFT_ERR_PATH_ESCAPE. */
  /** With `maxBytes`, reads at most that many bytes from the start (a 256 MiB file need not fill the server's memory). */
  readFile(path: string, opts?: { maxBytes?: number }): Promise<Buffer>;
  writeFile(path: string, data: string | Buffer): Promise<void>;
  listFiles(path?: string, opts?: { maxDepth?: number; maxEntries?: number }): Promise<FileEntry[]>;
  /**
   * Copies the workspace into a host directory (for grading in a fresh sandbox), within `bounds`
   * (default: what a fresh sandbox with this one's limits can hold with room to spare). Never fails
   * for what the workspace holds: special files, too deep or long paths and what is past the budget
   * are left out and listed in the report (see copy-out.ts).
   */
  copyOut(hostDir: string, bounds?: CopyBounds): Promise<CopyReport>;
  /**
   * CPU seconds the sandbox's processes have used so far, measured from outside it (the engine's
   * cgroup, the host's /proc for the sandbox's uid), so nothing it runs can hide from it; null where
   * the driver cannot tell (no uid of its own). Not activity: the TTL does not move.
   */
  cpuSeconds?(): Promise<number | null>;
  /**
   * Bytes of memory the sandbox holds now, measured from outside it (the engine's cgroup less its
   * page cache; the host's /proc PSS of the sandbox's uid), for the memory budget
   * (manager/memory.ts); null where the driver cannot tell.
   */
  memoryBytes?(): Promise<number | null>;
  /**
   * The rlimit its kernel applies to a process's memory: RLIMIT_DATA (Linux: absent means this), or
   * only RLIMIT_AS ('address-space': gVisor keeps RLIMIT_DATA without applying it; measured under
   * runsc, a 384 MB bytearray under `ulimit -d 262144` succeeds, under `ulimit -v 262144` it fails).
   */
  readonly memoryRlimit?: 'data' | 'address-space' | undefined;
  /**
   * The process started for `key` before this sandbox was handed over (SandboxSpec.prestarts), once:
   * null when there is none or it has exited since. What is never claimed runs until the sandbox goes.
   */
  claimPrestarted?(key: string): PrestartedProcess | null;
  /**
   * What a task-image sandbox (SandboxSpec.image: a Harbor task's) lets its grader do outside the
   * workspace rules: Harbor's verify step (src/harbor/verify.ts). Drivers without task images lack it.
   */
  readonly admin?: SandboxAdmin | undefined;
  destroy(): Promise<void>;
}

/**
 * Privileged operations on a task-image sandbox, for its grader only (never a tool's): paths are
 * absolute in the container, commands run as any user of the image. Each throws a coded 5xx error
 * (ours) when the sandbox or its engine is gone, never for what the command itself did.
 */
export interface SandboxAdmin {
  /** The directory the rollout's commands and file tools run in (the task's workdir, else the image's WORKDIR). */
  readonly workdir: string;
  /**
   * Runs argv as `user` (a name or uid of the image; absent: root) in the absolute `cwd`, with the
   * container's env plus `env`, no process sweep of its own; past `timeoutMs` its processes are killed
   * (every process but the init) and the result says `timedOut`.
   */
  exec(argv: string[], opts: { user?: string | undefined; cwd: string; env?: Record<string, string>; timeoutMs: number; stdin?: string | Buffer; maxOutputBytes?: number; signal?: AbortSignal }): Promise<ExecResult>;
  /** Kills every process in the sandbox but its init (whatever their user), until none is left. */
  killAll(): Promise<void>;
  /**
   * Copies the contents of a host folder into the existing absolute directory `dir`, owned by `owner`
   * (uid:gid numbers). Null when done; else what the container refused (a full disk, a file where a
   * folder goes): the container's state, which the rollout made.
   */
  upload(hostDir: string, dir: string, owner: { uid: number; gid: number }): Promise<string | null>;
  /** A tar of the absolute `paths` that exist (links kept as links, never followed), at most `maxBytes`. */
  pack(paths: string[], maxBytes: number): Promise<Buffer>;
  /** Extracts a tar (from pack()) at `/`; null when done, else what the container refused. */
  unpack(tar: Buffer): Promise<string | null>;
  /** The numeric uid and gid of a user of the image (absent: root). */
  ids(user?: string): Promise<{ uid: number; gid: number }>;
  /**
   * What differs in the root filesystem from the image, as the runtime outside the sandbox keeps it
   * (never read with the sandbox's own programs, which its rollout may have replaced); null when there
   * are too many changes to list.
   */
  changes(): Promise<FsChange[] | null>;
}

/** A path of a sandbox's root filesystem that differs from its image. */
export interface FsChange {
  path: string;
  kind: 'changed' | 'added' | 'deleted';
}

/**
 * The image a task's sandbox runs (a Harbor task's environment: src/harbor/sandbox-spec.ts), with
 * what Harbor's task.toml sets of it. Root filesystem writable, as the task's image expects; see
 * drivers/docker/images.ts for how it is made and why the container stays contained.
 */
export interface SandboxImage {
  /** A prebuilt image on the engine (never pulled). */
  ref?: string;
  /** Else built from a folder with a Dockerfile, once per digest and engine (tag rft-harbor-env:<digest prefix>). */
  build?: { contextDir: string; digest: string; timeoutMs: number };
  /** CPUs (NanoCpus) and memory (MB) of the container; absent: the server's limits. */
  cpus?: number;
  memoryMb?: number;
  /** The workspace (absolute); absent: the image's WORKDIR (or /). */
  workdir?: string;
  /** The user of every command of the rollout (name or uid); absent: the image's USER (or root). */
  user?: string;
  /** Added to the image's env for every command. */
  env?: Record<string, string>;
  /** A Docker network the container joins; absent: none (no network at all). */
  network?: string;
}

export interface SandboxSpec {
  traceId: string;
  /** Host directory whose contents become the starting workspace. */
  templateDir?: string;
  /** Inline files (relative path -> content), written after the template. */
  files?: Record<string, string>;
  /** Grading-only folder; never copied into the workspace, even when it lies inside templateDir. */
  hiddenDir?: string;
  limits: SandboxLimits;
  /** Owner labels (server instance id, purpose) used to find leaks after a crash. */
  labels: Record<string, string>;
  /** Absolute host directories visible read-only at the same path inside (e.g. stdio servers' install dirs). */
  readOnlyMounts?: string[];
  /**
   * A rollout's sandbox: the processes the warm pool's sandboxes of its kind start while they wait
   * (the rollout MCP servers'), so the rollout that takes one finds them running
   * (Sandbox.claimPrestarted). Only the pool's floor of sandboxes per kind carries them; a spec
   * without them (a grading sandbox) is handed a sandbox with none running. Drivers without a pool
   * ignore them.
   */
  prestarts?: PrestartSpec[];
  /** The task's image (a Harbor task's sandbox); absent: the driver's own image and workspace volume. */
  image?: SandboxImage;
}

/** A long-running process a pooled sandbox starts before any rollout takes it (see SandboxSpec.prestarts). */
export interface PrestartSpec {
  /** What the taker claims it by. */
  key: string;
  argv: string[];
  /** As Sandbox.spawn takes them. */
  cwd?: string;
  env?: Record<string, string>;
  /**
   * What is done with the process once it runs, still in the pool (the MCP handshake); what it gives
   * is handed over with the process. A failure stops the process: the taker starts its own.
   */
  ready?(proc: SandboxProcess): Promise<unknown>;
}

/** A prestarted process as its taker claims it: the process and what PrestartSpec.ready gave. */
export interface PrestartedProcess {
  process: SandboxProcess;
  ready: unknown;
}

export interface SandboxDriver {
  /** Its module's name in the driver list (drivers/index.ts). */
  readonly name: string;
  available(): Promise<boolean>;
  create(spec: SandboxSpec): Promise<Sandbox>;
  /**
   * Removes sandboxes a previous process of this server left behind (its own, by owner label or
   * directory, never another's), except those named in `keep` (container names of placements other
   * replicas may still use); returns how many.
   */
  reapOrphans(keep?: ReadonlySet<string>): Promise<number>;
  /** Opens a sandbox another process created (drivers with `ref`); RFT_ERR_NOT_FOUND when it is gone. */
  attach?(traceId: string, ref: SandboxRef, limits: SandboxLimits): Promise<Sandbox>;
  /** Removes a sandbox by its ref without opening it (an idle one found in the store). */
  remove?(ref: SandboxRef): Promise<void>;
  close?(): Promise<void>;
  /** Its warm pool's state (drivers with one; null before its first sandbox). */
  poolStats?(): WarmPoolStats | null;
  /** Its warm pool prepares sandboxes only while `mayPrepare` says so (the memory budget has room: the manager's). */
  gatePool?(mayPrepare: () => boolean): void;
  /** Its warm pool gives back up to `n` prepared sandboxes (rollouts wait for their room in the memory budget); how many. */
  shedPool?(n: number): number;
}

/** A driver's warm pool of prepared sandboxes, as /metrics shows it. */
export interface WarmPoolStats {
  /** Prepared items ready now. */
  warm: number;
  /** What the pool fills to now (the floor during a burst and when idle). */
  target: number;
  /** The next step's expected size (new sandboxes of the latest key). */
  predicted: number;
  /** New sandboxes served from the pool, and those prepared on demand. */
  hits: number;
  misses: number;
  /** What the pool's size is bounded by. */
  bounds: WarmPoolBounds;
  /** Per kind of sandbox the pool prepares (what an item can serve), the latest first. */
  kinds: WarmPoolKind[];
}

export interface WarmPoolBounds {
  /** Kept prepared whatever the arrivals, for the latest kind (RFT_SANDBOX_WARM). */
  floor: number;
  /** The most the learned size may reach: the lesser of `cap` and the budget at `preparedKb` each (0: no learning). */
  max: number;
  /** The memory budget of the learned pool (RFT_SANDBOX_WARM_MAX_MB); null: no learning. */
  budgetMb: number | null;
  /** What one prepared, idle sandbox costs the host, KB (the budget is divided by it). */
  preparedKb: number | null;
  /** The driver's sandbox cap (the pool never learns beyond it); null: no learning. */
  cap: number | null;
  /** Quiet time that ends a burst of new rollouts (a step). */
  gapMs: number;
  /** Quiet time after which the pool shrinks back to its floor. */
  idleMs: number;
}

/** The pool's state for one kind of sandbox (one key: tmpfs caps and read-only mounts). */
export interface WarmPoolKind {
  /** What its sandboxes are prepared with, for people. */
  kind: string;
  /** The kind of the latest new rollout (the one the floor is kept for). */
  latest: boolean;
  /** Prepared and idle, ready for a new rollout. */
  warm: number;
  /** Handed to rollouts (from the pool or made on demand) and not destroyed yet. */
  inUse: number;
  /** What the pool fills to for this kind now. */
  target: number;
  /** The next step's expected size. */
  predicted: number;
  /** The last steps seen (bursts of new rollouts), oldest first; at most POOL_STEPS_KEPT. */
  steps: WarmPoolStep[];
}

/** One step: a burst of new rollouts of one kind, and how many found a prepared sandbox. */
export interface WarmPoolStep {
  /** Its first and latest new rollout, ms since the epoch. */
  startedAt: number;
  lastAt: number;
  /** New rollouts in it (hits + misses). */
  size: number;
  /** Served from the pool. */
  hits: number;
  /** Prepared on demand (cold). */
  misses: number;
}

/** What the manager reports as it works (metrics, integrity flags). Every hook is optional. */
export interface SandboxObserver {
  /** A creation's wait for a slot (0 s when one was free) and how it ended. */
  queueWait?(outcome: 'granted' | 'timeout' | 'full' | 'aborted' | 'closed', seconds: number): void;
  /** A sandbox was created by the driver (after its admission). */
  created?(driver: string, seconds: number): void;
  /** Every command's result in a sandbox of the rollout (its own or a grader's fresh one). */
  exec?(traceId: string, command: string | string[], result: ExecResult): void;
}

export interface SandboxStats {
  driver: string;
  live: number;
  created: number;
  reaped: number;
  /** Graded rollouts' sandboxes destroyed before their grace period ended, to admit new rollouts at the cap. */
  reclaimed: number;
  queued: number;
  cap: number;
  /** The driver's warm pool, when it has one. */
  pool: WarmPoolStats | null;
  /** The memory budget (RFT_MEMORY_BUDGET_MB; null: none) and what is held of it now, MB (manager/memory.ts). */
  memoryMb?: { budget: number | null; held: number };
}
