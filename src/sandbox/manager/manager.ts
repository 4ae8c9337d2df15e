// Lifecycle of per-rollout sandboxes: created lazily on a rollout's first call (single-flight, so
// parallel first calls share one), kept while the rollout is active, destroyed after grading (with a
// grace period for the trainer's grader retries) or after inactivity (there is no end-of-rollout
// signal, and a rollout can be dropped without one), capped with a bounded admission queue, and
// reaped after a crash. At the cap, a caller that has to wait first reclaims the least recently used
// idle sandbox of a graded rollout still in its grace period; an ungraded rollout's sandbox is never
// taken to admit another.
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { errors, isRftError } from '../../errors.js';
import type { PlacementStore } from '../placements.js';
import { Admission } from './admission.js';
import { MemoryCosts } from './memory.js';
import { gradingLimits } from '../workspace/limits.js';
import { TrackedSandbox } from './tracked.js';
import { INSTANCE_LABEL } from '../host/workdir.js';
import { workspaceSource } from '../workspace/workspace.js';
import type { HarborTaskLookup } from '../../harbor/types.js';
import type { PrestartSpec, Sandbox, SandboxDriver, SandboxHistory, SandboxImage, SandboxItem, SandboxLimits, SandboxObserver, SandboxRef, SandboxSpec, SandboxStats } from '../types.js';

export interface SandboxManagerOptions {
  driver: SandboxDriver;
  limits: SandboxLimits;
  /** Live sandboxes at most (rollouts' and graders' together). */
  cap: number;
  /** Requests allowed to wait for a slot; past it, RFT_ERR_SANDBOX_UNAVAILABLE at once. */
  maxQueue: number;
  queueTimeoutMs: number;
  /** Inactivity after which a rollout's sandbox is destroyed. */
  ttlMs: number;
  /** Delay between a rollout's grade and its sandbox's destruction (grader retries reuse it). */
  graceMs: number;
  instanceId: string;
  /** Root for `item.sandbox.template` and `item.sandbox.hidden`. */
  templatesRoot: string;
  /** The Harbor tasks `item.sandbox.harbor` names (src/harbor/registry.ts), and RFT_HARBOR_NETWORK. */
  harborTasks?: HarborTaskLookup | undefined;
  harborNetwork?: string | undefined;
  log?: Logger;
  /** How often the TTL sweeper runs (default: ttlMs / 4, at most 60 s). */
  sweepIntervalMs?: number;
  /** Host directories every sandbox sees read-only (stdio servers' install dirs, see src/mcp). */
  readOnlyMounts?: string[];
  /** Processes the warm pool's floor starts ahead for rollouts (rollout MCP servers', see src/mcp): SandboxSpec.prestarts. */
  prestarts?: PrestartSpec[];
  /** Metrics and integrity flags. */
  observer?: SandboxObserver;
  /**
   * Bytes live sandboxes, what their rollouts start (bridged MCP instances) and what no session owns
   * (shared instances, the warm pool) may hold together (RFT_MEMORY_BUDGET_MB); unset: no budget.
   */
  memoryBudgetBytes?: number;
  /**
   * Where rollouts' sandboxes are, shared by replicas (the Postgres store): with a driver whose
   * sandboxes any replica can reach (docker), a rollout's sandbox is created once for all replicas
   * and opened by the others from its record. Without it, each replica keeps its own.
   */
  placements?: PlacementStore;
  /**
   * Where the process that made each rollout's sandbox is recorded (the store): a rollout whose
   * sandbox an earlier process made (before a crash or a restart) gets RFT_ERR_SANDBOX_LOST, never a
   * new, empty workspace. Without it (tests of the manager alone), nothing is recorded.
   */
  history?: SandboxHistory;
}

/** How an admission wait ended, from the error it failed with. */
function waitOutcome(e: unknown): 'timeout' | 'full' | 'aborted' | 'closed' {
  const code = (e as { code?: unknown })?.code;
  if (code === errors.sandboxQueueTimeout.code) return 'timeout';
  if (code === errors.sandboxUnavailable.code) return 'full';
  return code === errors.sandboxClosed.code ? 'closed' : 'aborted';
}

const SWEEP_PARALLELISM = 8;
const MB = 1024 * 1024;
const PURPOSE_LABEL = 'rft-endpoints.purpose';
const ROLLOUT = 'rollout';
const EPHEMERAL = 'ephemeral';

interface Entry {
  pending: Promise<TrackedSandbox>;
  /** When its record's last use was last written (shared placements). */
  touchedAt?: number;
  /** Callers still waiting for the creation; when the last one gives up, the creation is abandoned. */
  waiting: number;
  abandon: AbortController;
  sandbox?: TrackedSandbox;
  graceTimer?: NodeJS.Timeout;
  /** When its grace period ends (set once the rollout is graded). */
  graceEnds?: number;
}

export class SandboxManager {
  private readonly entries = new Map<string, Entry>();
  private readonly ephemeral = new Set<TrackedSandbox>();
  private readonly admission: Admission;
  private readonly endListeners: ((traceId: string) => void)[] = [];
  private sweeper: NodeJS.Timeout | undefined;
  private created = 0;
  private reaped = 0;
  private reclaimedCount = 0;
  /** Reclaims under way (each frees one slot for one waiter). */
  private reclaiming = 0;
  /** Graded rollouts whose sandbox was reclaimed, until their grace period would have ended. */
  private readonly reclaimed = new Map<string, number>();
  private closed = false;
  private sweeping = false;
  /** This process, as the history records it (a restarted server is another boot). */
  private readonly boot = randomUUID();

  /** What each kind a session holds costs, measured (memory.ts); the bridge records its instances here. */
  readonly memory = new MemoryCosts();
  /** Bytes held outside any rollout (shared MCP instances), as the bridge last measured them. */
  private readonly fixedBytes = new Map<string, number>();

  constructor(private readonly opts: SandboxManagerOptions) {
    const onWait = (): void => {
      this.shedPool();
      this.reclaim();
    };
    this.admission = new Admission(opts.cap, opts.maxQueue, opts.queueTimeoutMs, onWait, opts.memoryBudgetBytes ?? Infinity, () => this.heldOutside());
    const budget = opts.memoryBudgetBytes;
    // The warm pool's prepared sandboxes are held in the budget (heldOutside): it prepares while no rollout
    // waits for memory and one rollout's room stays free, so what it learned never takes a rollout's room.
    if (budget !== undefined) opts.driver.gatePool?.(() => this.admission.shortfall() === 0 && this.admission.memoryInUse + this.memory.rolloutBytes(this.driverName) <= budget);
  }

  /**
   * Rollouts wait for room in the memory budget: the warm pool gives back prepared sandboxes, one at a
   * time until the waiters fit or it has none (what it prepared is for rollouts to come; these came).
   */
  private shedPool(): void {
    const driver = this.opts.driver;
    if (this.opts.memoryBudgetBytes === undefined || !driver.shedPool) return;
    let shed = 0;
    while (this.admission.shortfall() > 0 && driver.shedPool(1) === 1) shed++;
    if (shed === 0) return;
    this.opts.log?.info({ shed }, 'warm pool gave back prepared sandboxes to admit rollouts waiting for memory');
    this.admission.recheck();
  }

  /** Memory no session owns: what is set aside (shared MCP instances), and the warm pool's prepared sandboxes with what they started. */
  private heldOutside(): number {
    let bytes = [...this.fixedBytes.values()].reduce((a, b) => a + b, 0);
    const pool = this.opts.driver.poolStats?.();
    if (pool) {
      const each = pool.bounds.preparedKb !== null ? pool.bounds.preparedKb * 1024 : this.memory.of(`sandbox:${this.driverName}`);
      bytes += pool.warm * each + Math.min(pool.warm, pool.bounds.floor) * (this.memory.rolloutBytes(this.driverName) - this.memory.of(`sandbox:${this.driverName}`));
    }
    return bytes;
  }

  /** Sets memory held outside any rollout under `key` (a shared MCP instance), as measured; 0 drops it. */
  holdOutside(key: string, bytes: number): void {
    if (bytes > 0) this.fixedBytes.set(key, bytes);
    else this.fixedBytes.delete(key);
    this.admission.recheck();
  }

  get driverName(): string {
    return this.opts.driver.name;
  }

  /** Reaps what a previous process left behind and starts the inactivity sweeper. */
  async start(): Promise<void> {
    // Sandboxes recorded for other replicas to use survive this replica's restart (its sweep removes them when idle).
    const keep = this.shared ? await this.shared.containersOf(this.opts.instanceId) : undefined;
    const n = await this.opts.driver.reapOrphans(keep);
    this.reaped += n;
    if (n > 0) this.opts.log?.info({ reaped: n, driver: this.opts.driver.name }, 'reaped sandboxes left by a previous run');
    const every = this.opts.sweepIntervalMs ?? Math.min(60_000, Math.max(1_000, Math.floor(this.opts.ttlMs / 4)));
    this.sweeper = setInterval(() => void this.sweep(), every);
    this.sweeper.unref();
  }

  /** The rollout's sandbox, created from the row's `sandbox` field on first use. */
  acquire(traceId: string, item: SandboxItem, signal?: AbortSignal): Promise<Sandbox> {
    if (this.closed) return Promise.reject(errors.sandboxClosed());
    // Its workspace is gone: a fresh, empty one would be graded or worked on as if it were the rollout's.
    if ((this.reclaimed.get(traceId) ?? 0) > Date.now()) return Promise.reject(errors.sandboxReclaimed());
    const existing = this.entries.get(traceId);
    // A destroyed sandbox, or a creation every caller abandoned, is as good as none.
    if (existing && !existing.sandbox?.isDestroyed && !existing.abandon.signal.aborted) {
      if (existing.sandbox) {
        existing.sandbox.lastUsed = Date.now();
        this.touch(traceId, existing);
        return Promise.resolve(existing.sandbox);
      }
      return this.join(existing, signal);
    }
    const entry: Entry = { pending: Promise.resolve(null as unknown as TrackedSandbox), waiting: 0, abandon: new AbortController() };
    // Shared by every caller of this rollout, so not tied to the first caller's signal: each caller
    // stops waiting on its own abort; only when all have left is the creation abandoned.
    entry.pending = this.open(traceId, item, entry.abandon.signal).then(
      (sb) => {
        entry.sandbox = sb;
        return sb;
      },
      (e: unknown) => {
        if (this.entries.get(traceId) === entry) this.entries.delete(traceId);
        throw e;
      },
    );
    entry.pending.catch(() => {}); // observed by the callers; never an unhandled rejection here
    this.entries.set(traceId, entry);
    return this.join(entry, signal);
  }

  private join(entry: Entry, signal: AbortSignal | undefined): Promise<TrackedSandbox> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    entry.waiting++;
    return new Promise<TrackedSandbox>((resolve, reject) => {
      const onAbort = (): void => {
        entry.waiting--;
        if (entry.waiting === 0 && !entry.sandbox) entry.abandon.abort(signal?.reason);
        reject(signal?.reason);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      entry.pending.then(
        (sb) => {
          signal?.removeEventListener('abort', onAbort);
          entry.waiting = Math.max(0, entry.waiting - 1);
          resolve(sb);
        },
        (e: unknown) => {
          signal?.removeEventListener('abort', onAbort);
          reject(e);
        },
      );
    });
  }

  /** The rollout's sandbox if it exists and is ready (never creates one). */
  peek(traceId: string): Sandbox | undefined {
    return this.entries.get(traceId)?.sandbox;
  }

  /** A sandbox owned by the caller (e.g. a grader running hidden tests); counts against the cap. */
  async createEphemeral(
    spec: { traceId: string; templateDir?: string; files?: Record<string, string>; image?: SandboxImage },
    signal?: AbortSignal,
  ): Promise<Sandbox> {
    if (this.closed) throw errors.sandboxClosed();
    const sb = await this.create(
      spec.traceId,
      signal,
      async () => ({
        ...(spec.templateDir !== undefined ? { templateDir: spec.templateDir } : {}),
        ...(spec.image !== undefined ? { image: spec.image } : {}),
        ...(spec.files !== undefined ? { files: spec.files } : {}),
        labels: { [PURPOSE_LABEL]: EPHEMERAL },
        limits: gradingLimits(this.opts.limits),
      }),
      false,
    );
    this.ephemeral.add(sb);
    return sb;
  }

  /** The rollout was graded: its sandbox goes after the grace period, unless it is graded again. */
  graded(traceId: string): void {
    const entry = this.entries.get(traceId);
    if (!entry) return;
    if (entry.graceTimer) clearTimeout(entry.graceTimer);
    entry.graceEnds = Date.now() + this.opts.graceMs;
    entry.graceTimer = setTimeout(() => void this.destroy(traceId), this.opts.graceMs);
    entry.graceTimer.unref();
    this.reclaim(); // callers may be waiting for a slot this one can give
  }

  /**
   * While callers wait for a slot (the cap is reached), destroys the least recently used idle
   * sandboxes of graded rollouts in their grace period, one per waiter: each one's release hands its
   * slot to the oldest waiter. A grader's retry needs no sandbox (its stored grade answers it); what
   * else would use the reclaimed one answers RFT_ERR_SANDBOX_RECLAIMED (503) until the grace period
   * would have ended. Never an ungraded rollout's sandbox, nor one running anything.
   */
  private reclaim(): void {
    if (this.closed || this.admission.queued <= this.reclaiming) return;
    const now = Date.now();
    const graded = [...this.entries]
      .filter(([, e]) => e.graceEnds !== undefined && e.graceEnds > now && e.sandbox?.owned === true && !e.sandbox.isDestroyed && e.sandbox.inflight === 0)
      .sort(([, a], [, b]) => (a.sandbox?.lastUsed ?? 0) - (b.sandbox?.lastUsed ?? 0));
    for (const [traceId, e] of graded) {
      if (this.admission.queued <= this.reclaiming) return;
      this.reclaiming++;
      this.reclaimedCount++;
      this.reclaimed.set(traceId, e.graceEnds as number);
      this.opts.log?.info({ trace_id: traceId }, 'graded rollout\'s sandbox reclaimed to admit a waiting rollout');
      void this.destroy(traceId).finally(() => {
        this.reclaiming--;
      });
    }
  }

  /** Destroys the rollout's sandbox now (wherever it is, with shared placements); false when it had none. */
  async destroy(traceId: string): Promise<boolean> {
    const entry = this.entries.get(traceId);
    if (!entry) return this.destroyRecorded(traceId);
    this.entries.delete(traceId);
    if (entry.graceTimer) clearTimeout(entry.graceTimer);
    const sb = await entry.pending.catch(() => null);
    if (!sb) return false;
    await sb.destroy().catch((e: unknown) => this.opts.log?.error({ err: e, trace_id: traceId }, 'sandbox destroy failed'));
    return true;
  }

  onRolloutEnd(listener: (traceId: string) => void): void {
    this.endListeners.push(listener);
  }

  stats(): SandboxStats {
    return {
      driver: this.opts.driver.name,
      live: this.admission.inUse,
      created: this.created,
      reaped: this.reaped,
      reclaimed: this.reclaimedCount,
      queued: this.admission.queued,
      cap: this.opts.cap,
      pool: this.opts.driver.poolStats?.() ?? null,
      memoryMb: { budget: this.opts.memoryBudgetBytes === undefined ? null : Math.round(this.opts.memoryBudgetBytes / MB), held: Math.round(this.admission.memoryInUse / MB) },
    };
  }

  /** Destroys every sandbox and refuses new ones. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.sweeper) clearInterval(this.sweeper);
    this.admission.close();
    // Placed sandboxes stay for the other replicas (their owner's sweep, or this replica's after a
    // restart, removes them when idle); only this process's own are destroyed.
    const all = [...this.entries]
      .filter(([, e]) => !this.shared || !e.sandbox?.ref)
      .map(([t]) => this.destroy(t));
    const eph = [...this.ephemeral].map((sb) => sb.destroy().catch(() => {}));
    await Promise.all([...all, ...eph]);
    await this.opts.driver.close?.();
  }

  /** Destroys rollout sandboxes idle for longer than the TTL, a few at a time; returns how many. */
  async sweep(now = Date.now()): Promise<number> {
    if (this.sweeping) return 0; // a slow sweep must not overlap the next tick
    this.sweeping = true;
    try {
      for (const [traceId, until] of this.reclaimed) if (until <= now) this.reclaimed.delete(traceId);
      this.reclaim();
      const isIdle = (sb: TrackedSandbox | undefined): sb is TrackedSandbox => !!sb && sb.inflight === 0 && now - sb.lastUsed >= this.opts.ttlMs;
      const idle: (() => Promise<boolean>)[] = [
        ...(this.shared ? await this.idleShared(now, isIdle) : [...this.entries].filter(([, e]) => isIdle(e.sandbox)).map(([traceId]) => () => this.destroy(traceId))),
        // An ephemeral sandbox is its caller's to destroy; one a crashed grader forgot still expires.
        ...[...this.ephemeral].filter(isIdle).map((sb) => () => sb.destroy().then(() => true, () => false)),
      ];
      let done = 0;
      const worker = async (): Promise<void> => {
        for (let job = idle.pop(); job !== undefined; job = idle.pop()) {
          if (await job()) {
            done++;
            this.reaped++;
          }
        }
      };
      await Promise.all(Array.from({ length: SWEEP_PARALLELISM }, worker));
      if (done > 0) this.opts.log?.info({ destroyed: done }, 'sandboxes idle past their TTL destroyed');
      return done;
    } finally {
      this.sweeping = false;
    }
  }

  private async create(
    traceId: string,
    signal: AbortSignal | undefined,
    source: () => Promise<Omit<SandboxSpec, 'traceId' | 'limits'> & { limits?: SandboxLimits }>,
    forRollout = true,
  ): Promise<TrackedSandbox> {
    const observer = this.opts.observer;
    const waitStart = performance.now();
    // A rollout's sandbox holds room for what its rollout may start (memory.ts); a grader's, itself.
    const bytes = this.opts.memoryBudgetBytes === undefined ? 0 : forRollout ? this.memory.rolloutBytes(this.driverName) : this.memory.of(`sandbox:${this.driverName}`);
    try {
      await this.admission.acquire(signal, bytes);
    } catch (e) {
      observer?.queueWait?.(waitOutcome(e), (performance.now() - waitStart) / 1000);
      throw e;
    }
    observer?.queueWait?.('granted', (performance.now() - waitStart) / 1000);
    let inner: Sandbox;
    let labels: Record<string, string>;
    try {
      const src = await source();
      labels = { ...src.labels, [INSTANCE_LABEL]: this.opts.instanceId, 'rft-endpoints.trace_id': traceId };
      const mounts = this.opts.readOnlyMounts?.length ? { readOnlyMounts: this.opts.readOnlyMounts } : {};
      const createStart = performance.now();
      inner = await this.opts.driver.create({ ...src, traceId, limits: src.limits ?? this.opts.limits, labels, ...mounts });
      observer?.created?.(this.opts.driver.name, (performance.now() - createStart) / 1000);
    } catch (e) {
      this.admission.release(bytes);
      throw e;
    }
    if (this.closed) {
      // close() ran while this one was being built: nobody would ever destroy it.
      await inner.destroy().catch(() => {});
      throw errors.sandboxClosed();
    }
    this.created++;
    // A fresh sandbox as made, measured from outside (a rollout's may hold what the pool started ahead for it: not the sandbox's own cost).
    if (this.opts.memoryBudgetBytes !== undefined && (!forRollout || !this.opts.prestarts?.length)) this.measure(inner);
    const rollout = labels[PURPOSE_LABEL] === ROLLOUT;
    const onExec = observer?.exec;
    return new TrackedSandbox(
      inner,
      (sb, removed) => {
        this.ephemeral.delete(sb);
        this.admission.release(bytes);
        if (rollout) this.ended(sb, removed);
      },
      onExec ? (command, result) => onExec.call(observer, traceId, command, result) : undefined,
    );
  }

  /** Records a fresh sandbox's footprint (not awaited; one it cannot tell, or gone meanwhile, records nothing). */
  private measure(sb: Sandbox): void {
    if (!this.memory.due(`sandbox:${this.driverName}`)) return;
    void sb.memoryBytes?.().then(
      (b) => b !== null && this.memory.record(`sandbox:${this.driverName}`, b),
      () => {},
    );
  }

  /** A rollout's sandbox is gone (or its removal failed: then its record stays, for a later sweep). */
  private ended(sb: TrackedSandbox, removed: boolean): void {
    const entry = this.entries.get(sb.traceId);
    if (entry?.sandbox === sb) this.entries.delete(sb.traceId);
    const ref = sb.ref;
    if (this.shared && ref && removed) {
      this.shared.release(sb.traceId, ref.container, this.opts.instanceId).catch((e: unknown) => this.opts.log?.warn({ err: e, trace_id: sb.traceId }, 'could not drop the record of a removed sandbox'));
    }
    for (const l of this.endListeners) l(sb.traceId);
  }

  /** Placements are shared only when they are configured and the driver's sandboxes can be reached from anywhere. */
  private get shared(): PlacementStore | undefined {
    return this.opts.driver.attach ? this.opts.placements : undefined;
  }

  private rolloutSource(item: SandboxItem): () => Promise<Omit<SandboxSpec, 'traceId' | 'limits'>> {
    const prestarts = this.opts.prestarts?.length ? { prestarts: this.opts.prestarts } : {};
    const harbor = { lookup: this.opts.harborTasks, network: this.opts.harborNetwork };
    return async () => {
      const source = await workspaceSource(item, this.opts.templatesRoot, harbor);
      // Only the Docker driver runs a task's image (gVisor is Docker with runsc): elsewhere it would be an empty workspace.
      if (source.image && this.opts.driver.name !== 'docker') throw errors.sandboxFailed(`Harbor tasks run only on the docker driver (RFT_SANDBOX=docker), not ${this.opts.driver.name}`);
      return { ...source, labels: { [PURPOSE_LABEL]: ROLLOUT }, ...prestarts };
    };
  }

  /**
   * The rollout's sandbox for this process: created here, or, with shared placements, opened where
   * another replica created it. Two replicas asked at once create one: the store's claim decides.
   */
  private async open(traceId: string, item: SandboxItem, signal: AbortSignal): Promise<TrackedSandbox> {
    const shared = this.shared;
    if (!shared) return this.createRecorded(traceId, item, signal);
    const deadline = Date.now() + this.opts.queueTimeoutMs;
    for (let delay = 25; ; delay = Math.min(delay * 2, 250)) {
      if (signal.aborted) throw signal.reason;
      const claim = await shared.claim(traceId, this.opts.instanceId, Date.now()).catch((e: Error) => {
        throw errors.store(e.message);
      });
      if (claim.kind === 'placed') {
        try {
          return await this.attach(traceId, { engine: claim.engine, container: claim.container });
        } catch (e) {
          if (!isRftError(e) || e.code !== 'RFT_ERR_NOT_FOUND') throw e;
          // Its container is gone (removed by hand, its engine reset): the record goes, a new one is made.
          await shared.release(traceId, claim.container, this.opts.instanceId);
          continue;
        }
      }
      if (claim.kind === 'mine') {
        let sb: TrackedSandbox;
        try {
          sb = await this.create(traceId, signal, this.rolloutSource(item));
        } catch (e) {
          await shared.release(traceId, null, this.opts.instanceId).catch(() => {});
          throw e;
        }
        const ref = sb.ref as { engine: string; container: string };
        if (await shared.place(traceId, this.opts.instanceId, ref.engine, ref.container, Date.now())) return sb;
        // The claim was handed over meanwhile (this replica looked gone): use the other one's.
        await sb.destroy().catch(() => {});
        continue;
      }
      if (Date.now() + delay > deadline) throw errors.sandboxQueueTimeout(this.opts.queueTimeoutMs);
      await new Promise((r) => setTimeout(r, delay));
    }
  }

  /**
   * The rollout's sandbox, made by this process and recorded in the history before any call uses it.
   * A record of another process means the rollout had a sandbox that did not survive it (kill -9, a
   * restart, a host reboot: the workspace went with it, or was reaped at start; or, with replicas,
   * another replica has it): a new one would be worked on and graded as the rollout's work, so the
   * rollout is lost instead (503, never charged; the trainer drops it). Recorded only once made, so a
   * creation that failed (no slot in time) leaves no record; a record stays, so every later call and
   * grade of the rollout answers the same.
   */
  private async createRecorded(traceId: string, item: SandboxItem, signal: AbortSignal): Promise<TrackedSandbox> {
    const history = this.opts.history;
    if (!history) return this.create(traceId, signal, this.rolloutSource(item));
    const fromStore = <T>(p: Promise<T>): Promise<T> =>
      p.catch((e: unknown) => {
        throw isRftError(e) ? e : errors.store((e as Error).message);
      });
    const lost = () => {
      this.opts.log?.warn({ trace_id: traceId }, "a rollout's sandbox made by another server process is gone from here: the rollout is lost");
      return errors.sandboxLost('another server process made it, before a restart or on another replica; its workspace is not here');
    };
    const prior = await fromStore(history.sandboxBoot(traceId));
    if (prior !== undefined && prior !== this.boot) throw lost();
    const sb = await this.create(traceId, signal, this.rolloutSource(item));
    if (prior === this.boot) return sb;
    let boot: string;
    try {
      boot = await fromStore(history.claimSandbox(traceId, this.boot, Date.now()));
    } catch (e) {
      await sb.destroy().catch(() => {});
      throw e;
    }
    if (boot === this.boot) return sb;
    await sb.destroy().catch(() => {});
    throw lost();
  }

  /** Opens another replica's sandbox: no slot of this replica's cap, and its removal drops the record. */
  private async attach(traceId: string, ref: SandboxRef): Promise<TrackedSandbox> {
    const inner = await this.opts.driver.attach!(traceId, ref, this.opts.limits);
    const observer = this.opts.observer;
    const onExec = observer?.exec;
    return new TrackedSandbox(
      inner,
      (sb, removed) => this.ended(sb, removed),
      onExec ? (command, result) => onExec.call(observer, traceId, command, result) : undefined,
      false,
    );
  }

  /** Writes the rollout's last use to its record, at most every ttl/4 (the sweep allows for that much). */
  private touch(traceId: string, entry: Entry): void {
    const shared = this.shared;
    const now = Date.now();
    if (!shared || now - (entry.touchedAt ?? 0) < this.touchEveryMs) return;
    entry.touchedAt = now;
    shared.touch(traceId, now).catch((e: unknown) => this.opts.log?.warn({ err: e, trace_id: traceId }, 'could not record a sandbox use'));
  }

  private get touchEveryMs(): number {
    return Math.max(1_000, Math.floor(this.opts.ttlMs / 4));
  }

  /**
   * With shared placements, idle is what the record says (uses on every replica), for this replica's
   * sandboxes and those of replicas that are gone. Opened copies of others' sandboxes are only
   * forgotten; this replica's sandboxes that another replica removed (DELETE, a grade's grace) free
   * their slots.
   */
  private async idleShared(now: number, isIdle: (sb: TrackedSandbox | undefined) => sb is TrackedSandbox): Promise<(() => Promise<boolean>)[]> {
    const shared = this.shared as PlacementStore;
    const jobs: (() => Promise<boolean>)[] = [];
    const [records, mine] = await Promise.all([shared.idle(this.opts.instanceId, now - this.opts.ttlMs - this.touchEveryMs), shared.containersOf(this.opts.instanceId)]);
    const busy = new Set([...this.entries].filter(([, e]) => !e.sandbox || e.sandbox.inflight > 0 || !isIdle(e.sandbox)).map(([t]) => t));
    for (const p of records) {
      if (busy.has(p.traceId)) continue;
      jobs.push(() => this.destroyRecorded(p.traceId));
    }
    const doomed = new Set(records.map((p) => p.traceId));
    for (const [traceId, e] of this.entries) {
      const sb = e.sandbox;
      if (!sb || doomed.has(traceId)) continue;
      if (!sb.owned && isIdle(sb)) this.entries.delete(traceId);
      else if (sb.owned && sb.ref && !mine.has(sb.ref.container) && isIdle(sb)) jobs.push(() => this.destroy(traceId));
    }
    return jobs;
  }

  /** Removes the sandbox a record names (this process's entry for it too) and drops the record. */
  private async destroyRecorded(traceId: string): Promise<boolean> {
    const shared = this.shared;
    if (!shared) return false;
    const entry = this.entries.get(traceId);
    if (entry) return this.destroy(traceId);
    const p = await shared.get(traceId);
    if (!p) return false;
    if (p.engine !== null && p.container !== null) {
      try {
        await this.opts.driver.remove!({ engine: p.engine, container: p.container });
      } catch (e) {
        this.opts.log?.warn({ err: e, trace_id: traceId }, 'could not remove an idle sandbox; it is tried again at the next sweep');
        return false;
      }
    }
    await shared.release(traceId, p.container, p.owner);
    for (const l of this.endListeners) l(traceId);
    return true;
  }
}
