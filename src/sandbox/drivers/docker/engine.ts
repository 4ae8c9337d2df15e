// One Docker engine the driver places sandboxes on: its API client, its cap, how many sandboxes this
// replica keeps there, and whether it answers. An engine that stops answering (refused, reset, a
// request past its timeout, two missed health pings) is taken out of placement: new calls that need it
// fail at once with RFT_ERR_SANDBOX_ENGINE_DOWN (503) instead of hanging. A probe every couple of
// seconds puts it back when it answers again; calls already running on it are failed the same way
// only when that first probe fails too (a busy engine that missed one ping goes on running them).
import type { Logger } from 'pino';
import { errors } from '../../../errors.js';
import { DockerApi, EngineUnreachable, type DockerEndpoint } from './api.js';
import { EngineEvents } from './events.js';

const PROBE_EVERY_MS = 2_000;
const PROBE_TIMEOUT_MS = 3_000;
const HEALTH_EVERY_MS = 10_000;
/** Between the two pings of check(). */
const RECHECK_MS = 1_000;
/** A creation's time before the engine has made one (about what create + start took on 2 cores, quiet). */
const FIRST_CREATE_MS = 500;
/** Weight of the latest creation in the engine's average (an exponential moving average). */
const CREATE_EWMA = 0.2;
/** Container creations at once per engine (hosts.ts: starts=N). */
export const DEFAULT_STARTS = 8;

/** At most `n` tasks at once; the others start in arrival order. */
export class Slots {
  private active = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(private readonly n: number) {}

  async run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.active < this.n) this.active++;
    else await new Promise<void>((resolve) => this.waiting.push(resolve)); // the slot is handed over
    try {
      return await fn();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.active--;
    }
  }
}

export class DockerEngine {
  readonly api: DockerApi;
  /** The engine's event stream: deaths of spawned processes and ooms in any sandbox container on it (whichever replica made it). */
  readonly events: EngineEvents;
  /** Sandboxes (and warm containers) this replica holds on the engine. */
  live = 0;
  private down: string | null = null;
  private probe: NodeJS.Timeout | undefined;
  private health: NodeJS.Timeout | undefined;
  private closed = false;
  private readonly startSlots: Slots;
  /** Creations asked of this engine and not finished (queued for a slot or running). */
  private pendingCreations = 0;
  /** What a creation (create + start) has taken here lately, ms: the engine's measured rate. */
  private createMs = FIRST_CREATE_MS;
  /** Calls running against the engine, each failed with ENGINE_DOWN when a probe after markDown finds it silent. */
  private readonly inUse = new Set<() => void>();
  /** Waiting in settled() for the next probe. */
  private probed: (() => void)[] = [];

  constructor(
    readonly name: string,
    readonly cap: number,
    endpoint: DockerEndpoint,
    private readonly log?: Logger,
    private readonly starts = DEFAULT_STARTS,
  ) {
    this.api = new DockerApi(endpoint);
    this.startSlots = new Slots(starts);
    this.events = new EngineEvents(this.api, 'rft-endpoints.sandbox');
  }

  /** The engine is this machine's (a unix socket): host paths mean the same thing on both sides. */
  get local(): boolean {
    return this.api.endpoint.socketPath !== undefined;
  }

  get up(): boolean {
    return this.down === null;
  }

  /** Room left under this engine's cap. */
  get free(): number {
    return this.cap - this.live;
  }

  /**
   * Like use(), for a container's create + start: at most `starts` at once on this engine, the others
   * wait in arrival order. The engine does these with its OCI runtime (a process each, and mounts);
   * hundreds at once saturate it and every exec waits behind them. Removals are not queued: they free
   * room, and a removal waiting behind a burst's creations kept a graded rollout's processes alive.
   */
  async creating<T>(fn: (api: DockerApi) => Promise<T>): Promise<T> {
    this.pendingCreations++;
    try {
      return await this.startSlots.run(async () => {
        const t0 = performance.now();
        const out = await this.use(fn);
        this.createMs += CREATE_EWMA * (performance.now() - t0 - this.createMs);
        return out;
      });
    } finally {
      this.pendingCreations--;
    }
  }

  /**
   * When a creation asked now would be done, ms, at the engine's measured rate: the creations ahead of
   * it, `starts` at a time, then its own. What placement compares engines by.
   */
  expectedCreateMs(): number {
    return Math.ceil((this.pendingCreations + 1) / this.starts) * this.createMs;
  }

  /**
   * Runs `fn` against the engine; a failure to reach it marks it down and answers ENGINE_DOWN. So does
   * the engine being found not answering meanwhile (marked down, then its first probe failed too): a
   * call whose request the engine accepted and then never answered (a stopped engine holds connections
   * open, and an exec's start or stream has no timeout of its own) does not hang with it. What `fn`
   * still holds ends by its own timeouts or when the engine answers again; its result is dropped.
   */
  async use<T>(fn: (api: DockerApi) => Promise<T>): Promise<T> {
    if (this.down !== null) throw errors.sandboxEngineDown();
    let leave = (): void => {};
    const markedDown = new Promise<never>((_, reject) => (leave = () => reject(errors.sandboxEngineDown())));
    this.inUse.add(leave);
    try {
      const work = fn(this.api);
      work.catch(() => {}); // settled after the race was lost: nobody waits for it
      return await Promise.race([work, markedDown]);
    } catch (e) {
      if (!(e instanceof EngineUnreachable)) throw e;
      this.markDown(e.message);
      throw errors.sandboxEngineDown();
    } finally {
      this.inUse.delete(leave);
    }
  }

  /** Answers the engine's ping within the probe timeout. */
  async ping(): Promise<boolean> {
    try {
      const r = await this.api.call('GET', '/_ping', undefined, { timeoutMs: PROBE_TIMEOUT_MS });
      return r.status === 200;
    } catch {
      return false;
    }
  }

  /**
   * Whether the engine answers, taking it out of placement (markDown) when it does not. Silent means
   * two missed pings a second apart: a loaded engine can miss one (series run 5 of stop 34: a gVisor
   * sandbox dying under its fork bomb, on a loaded machine, held the engine past one ping's 3 s), and
   * one missed ping used to take it down, every other rollout's calls there answering 503 (discarded)
   * meanwhile: a policy could have other rollouts discarded that way.
   */
  async check(why: string): Promise<boolean> {
    if (await this.ping()) return true;
    await new Promise((resolve) => setTimeout(resolve, RECHECK_MS).unref());
    if (await this.ping()) return true;
    this.markDown(why);
    return false;
  }

  /**
   * Resolves at once while the engine is up, else when its next probe has answered or not (then `up`
   * says which). For work that should not be refused because the engine was slow a
   * moment ago (removing a container: refused, it stays until a reaper finds it).
   */
  async settled(): Promise<void> {
    if (this.down === null || this.closed) return;
    await new Promise<void>((resolve) => this.probed.push(resolve));
  }

  /**
   * Takes the engine out of placement: calls that start now fail at once. Calls already running go on
   * until the first probe: if it fails too, the engine is not answering and they fail with
   * ENGINE_DOWN; if it answers, the engine was only slow (a burst of container starts can make it
   * miss a ping) and they finish. Failing them at the first sign would answer 503 for commands still
   * running in their containers, and the trainer's retry would run each again.
   */
  markDown(why: string): void {
    if (this.down !== null || this.closed) return;
    this.down = why;
    this.log?.error({ engine: this.name, url: this.api.url, why }, 'docker engine is not answering: taken out of placement');
    const again = (first: boolean): void => {
      this.probe = setTimeout(() => {
        void this.ping().then((ok) => {
          if (this.closed) return;
          if (ok) {
            this.down = null;
            this.log?.warn({ engine: this.name }, 'docker engine answers again: back in placement');
          } else if (first) this.leaveAll();
          for (const resolve of this.probed.splice(0)) resolve();
          if (!ok) again(false);
        });
      }, PROBE_EVERY_MS);
      this.probe.unref();
    };
    again(true);
  }

  /** Fails every call running against the engine with ENGINE_DOWN. */
  private leaveAll(): void {
    for (const leave of this.inUse) leave();
    this.inUse.clear();
  }

  /** Pings the engine now and then, so one that stopped answering leaves placement before a call hits it. */
  watch(): void {
    this.health ??= setInterval(() => {
      if (this.down === null) void this.check('health pings failed');
    }, HEALTH_EVERY_MS);
    this.health.unref();
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const resolve of this.probed.splice(0)) resolve();
    clearTimeout(this.probe);
    clearInterval(this.health);
    this.events.close();
    await this.api.close().catch(() => {});
  }
}
