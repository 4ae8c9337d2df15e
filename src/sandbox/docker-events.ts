// Tells when a long-running Docker exec has exited. An exec started with stdin attached keeps its
// hijacked connection open after its process is gone (until the client closes stdin), so the
// connection cannot say it; the engine's event stream can (`exec_die`, with the exit code). One
// stream per driver, filtered to this instance's containers, open only while someone waits.
import { request, type ClientRequest, type IncomingMessage } from 'node:http';
import { DOCKER_API } from './docker-api.js';

interface DockerEvent {
  Action?: string;
  time?: number;
  Actor?: { Attributes?: Record<string, string> };
}

export class ExecDeaths {
  private readonly waiters = new Map<string, (exitCode: number | null) => void>();
  private current: ClientRequest | null = null;
  private ready: Promise<void> | null = null;
  private since = 0;

  constructor(
    private readonly socketPath: string,
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
    const req = this.current;
    this.current = null;
    this.ready = null;
    req?.destroy();
  }

  private open(): Promise<void> {
    this.ready ??= new Promise<void>((resolve, reject) => {
      const filters = encodeURIComponent(JSON.stringify({ type: ['container'], event: ['exec_die'], label: [this.label] }));
      const since = this.since ? `&since=${this.since}` : '';
      const req = request({ socketPath: this.socketPath, path: `/${DOCKER_API}/events?filters=${filters}${since}`, method: 'GET' });
      this.current = req;
      req.once('error', (e) => {
        this.lost(req);
        reject(e);
      });
      req.once('response', (res: IncomingMessage) => {
        resolve();
        let buf = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          buf += chunk;
          for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
            this.dispatch(buf.slice(0, nl));
            buf = buf.slice(nl + 1);
          }
        });
        res.once('end', () => this.lost(req));
        res.once('error', () => this.lost(req));
      });
      req.end();
    });
    return this.ready;
  }

  /** The stream ended under us (an engine restart): open it again from where it stopped, if anyone waits. */
  private lost(req: ClientRequest): void {
    if (this.current !== req) return;
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
