// What the engine's event stream tells the driver, one stream per engine, filtered to sandbox
// containers (any replica's):
// - when a long-running exec has exited. An exec started with stdin attached keeps its hijacked
//   connection open after its process is gone (until the client closes stdin), so the connection
//   cannot say it; `exec_die` does, with the exit code;
// - when a container's memory cgroup ran out (`oom`), which is what makes a stopped gVisor sandbox
//   the rollout's doing (DockerSandbox.endedByRollout). The engine replays past events from a bounded
//   log only (the last 256 in moby's daemon/events), and every exec adds three, so the oom is kept
//   here as it happens: the stream stays open while a sandbox of this process lives on the engine;
// - when a container was killed or stopped through the engine (`kill`: an operator's docker kill,
//   stop or rm -f, the engine's own shutdown), which keeps a task container that stopped ours when
//   its rollout runs as root and could have stopped it itself (DockerSandbox.endedByRollout); and
//   whether the stream broke since (an engine restart, whose events are gone with it);
// - when a container died (`die`): gVisor keeps a command's stream open after a memory hog got the
//   sandbox's kernel killed, so the call in flight learns of the death here rather than at its
//   timeout.
import type { Readable } from 'node:stream';
import type { DockerApi } from './api.js';

interface DockerEvent {
  Action?: string;
  time?: number;
  timeNano?: number;
  Actor?: { Attributes?: Record<string, string> };
}

/** The grader's signal to a task container's keeper (admin.ts), which kills the rollout's processes, not the container. */
export function keeperSignal(signal: string | undefined): boolean {
  return signal === '10' || signal === 'SIGUSR1' || signal === 'USR1';
}

/** Containers whose last oom (and last kill) is remembered (the oldest are dropped first; a sandbox's is dropped when it goes). */
const OOMS_KEPT = 4096;

/** Keeps when `ev` happened to container `name` (ms, the engine's clock), bounded: the oldest entries go first. */
function remember(times: Map<string, number>, name: string, ev: DockerEvent): void {
  const at = typeof ev.timeNano === 'number' ? ev.timeNano / 1e6 : (ev.time ?? 0) * 1000;
  times.delete(name); // re-inserted last: the map's order is the drop order
  times.set(name, at);
  if (times.size > OOMS_KEPT) times.delete(times.keys().next().value as string);
}

export class EngineEvents {
  private readonly waiters = new Map<string, (exitCode: number | null) => void>();
  /** Container name -> when its memory cgroup last ran out (ms since the epoch, the engine's clock). */
  private readonly ooms = new Map<string, number>();
  /** Container name -> when it was last killed through the engine (ms, the engine's clock). */
  private readonly kills = new Map<string, number>();
  /** How many times the stream ended under us (an engine restart): events may have been missed. */
  breaks = 0;
  /** Container name -> what to do when it dies (calls in flight in it). */
  private readonly deaths = new Map<string, Set<() => void>>();
  /** Sandboxes of this process that keep the stream open. */
  private holders = 0;
  private current: Readable | null = null;
  private ready: Promise<void> | null = null;
  private since = 0;

  constructor(
    private readonly api: DockerApi,
    /** `key=value` label every watched container carries. */
    private readonly label: string,
  ) {}

  /**
   * Resolves with the exit code when exec `execId` dies. Resolves once the event stream is open, so
   * call it (and await it) before the exec is started: no death can be missed.
   */
  async watch(execId: string): Promise<{ died: Promise<number | null> }> {
    const died = new Promise<number | null>((resolve) => this.waiters.set(execId, resolve));
    try {
      await this.open();
    } catch (e) {
      this.forget(execId);
      throw e;
    }
    return { died }; // wrapped: an async function would otherwise wait for the death itself
  }

  /** Stops waiting for `execId` (its connection closed some other way). */
  forget(execId: string): void {
    this.waiters.delete(execId);
    this.closeIfUnused();
  }

  /**
   * Keeps the stream open for a sandbox (ooms are seen as they happen) until the returned release
   * is called. Opening fails quietly: the stream is tried again at the next hold or watch, and
   * endedByRollout falls back to the engine's own log.
   */
  hold(): () => void {
    this.holders++;
    void this.open().catch(() => {});
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.holders--;
      this.closeIfUnused();
    };
  }

  /**
   * Calls `then` when container `name` dies, as seen on the stream (kept open by hold(): a death
   * while the stream is down is not seen, and the caller ends as it would have without this).
   * Returns the cancellation.
   */
  onDeath(name: string, then: () => void): () => void {
    let set = this.deaths.get(name);
    if (!set) this.deaths.set(name, (set = new Set()));
    set.add(then);
    return () => {
      set.delete(then);
      if (set.size === 0 && this.deaths.get(name) === set) this.deaths.delete(name);
    };
  }

  /** When container `name`'s memory cgroup last ran out, as seen on the stream (ms), if it did. */
  oomAt(name: string): number | undefined {
    return this.ooms.get(name);
  }

  /** When container `name` was last killed or stopped through the engine, as seen on the stream (ms), if it was. */
  killedAt(name: string): number | undefined {
    return this.kills.get(name);
  }

  /** Whether the stream is open now (what it says of the past holds only while it stays open). */
  get isOpen(): boolean {
    return this.current !== null;
  }

  /** Drops what is remembered of container `name` (it is being removed). */
  forgetContainer(name: string): void {
    this.ooms.delete(name);
    this.kills.delete(name);
  }

  private closeIfUnused(): void {
    if (this.waiters.size === 0 && this.holders === 0) this.close();
  }

  close(): void {
    const body = this.current;
    this.current = null;
    this.ready = null;
    body?.destroy();
  }

  private open(): Promise<void> {
    this.ready ??= (async () => {
      const filters = encodeURIComponent(JSON.stringify({ type: ['container'], event: ['exec_die', 'oom', 'die', 'kill'], label: [this.label] }));
      const since = this.since ? `&since=${this.since}` : '';
      let body: Readable;
      try {
        body = (await this.api.stream(`/events?filters=${filters}${since}`, 15_000, 0)).body;
      } catch (e) {
        this.ready = null;
        throw e;
      }
      this.current = body;
      let buf = '';
      body.setEncoding('utf8');
      body.on('data', (chunk: string) => {
        buf += chunk;
        for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
          this.dispatch(buf.slice(0, nl));
          buf = buf.slice(nl + 1);
        }
      });
      body.once('end', () => this.lost(body));
      body.once('error', () => this.lost(body));
      body.once('close', () => this.lost(body));
    })();
    return this.ready;
  }

  /** The stream ended under us (an engine restart): open it again from where it stopped, if anyone needs it. */
  private lost(body: Readable): void {
    if (this.current !== body) return;
    this.breaks++;
    this.current = null;
    this.ready = null;
    if (this.waiters.size > 0 || this.holders > 0) setTimeout(() => void this.open().catch(() => {}), 500).unref();
  }

  private dispatch(line: string): void {
    let ev: DockerEvent;
    try {
      ev = JSON.parse(line) as DockerEvent;
    } catch {
      return;
    }
    if (typeof ev.time === 'number') this.since = Math.max(this.since, ev.time - 1);
    const attrs = ev.Actor?.Attributes ?? {};
    if (ev.Action === 'oom' && attrs.name !== undefined) return remember(this.ooms, attrs.name, ev);
    if (ev.Action === 'kill' && attrs.name !== undefined) {
      if (!keeperSignal(attrs.signal)) remember(this.kills, attrs.name, ev);
      return;
    }
    if (ev.Action === 'die' && attrs.name !== undefined) {
      for (const then of [...(this.deaths.get(attrs.name) ?? [])]) then();
      return;
    }
    const id = attrs.execID;
    if (ev.Action !== 'exec_die' || id === undefined) return;
    const resolve = this.waiters.get(id);
    if (!resolve) return;
    this.forget(id);
    const code = Number(attrs.exitCode);
    resolve(Number.isInteger(code) ? code : null);
  }
}
