// Tells when a long-running Docker exec has exited. An exec started with stdin attached keeps its
// hijacked connection open after its process is gone (until the client closes stdin), so the
// connection cannot say it; the engine's event stream can (`exec_die`, with the exit code). One
// stream per engine, filtered to this owner's containers, open only while someone waits.
import type { Readable } from 'node:stream';
import type { DockerApi } from './api.js';

interface DockerEvent {
  Action?: string;
  time?: number;
  Actor?: { Attributes?: Record<string, string> };
}

export class ExecDeaths {
  private readonly waiters = new Map<string, (exitCode: number | null) => void>();
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
    if (this.waiters.size === 0) this.close();
  }

  close(): void {
    const body = this.current;
    this.current = null;
    this.ready = null;
    body?.destroy();
  }

  private open(): Promise<void> {
    this.ready ??= (async () => {
      const filters = encodeURIComponent(JSON.stringify({ type: ['container'], event: ['exec_die'], label: [this.label] }));
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

  /** The stream ended under us (an engine restart): open it again from where it stopped, if anyone waits. */
  private lost(body: Readable): void {
    if (this.current !== body) return;
    this.current = null;
    this.ready = null;
    if (this.waiters.size > 0) setTimeout(() => void this.open().catch(() => {}), 500).unref();
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
    const id = attrs.execID;
    if (ev.Action !== 'exec_die' || id === undefined) return;
    const resolve = this.waiters.get(id);
    if (!resolve) return;
    this.forget(id);
    const code = Number(attrs.exitCode);
    resolve(Number.isInteger(code) ? code : null);
  }
}
