// A minimal Docker Engine API client (undici), not the docker CLI: no process spawn per call, errors
// come back as status codes we can map, and one keep-alive pool per engine. An engine is a unix
// socket or a `tcp://` address, with TLS client certificates the way Docker's own DOCKER_HOST /
// DOCKER_TLS_VERIFY / DOCKER_CERT_PATH conventions describe them (see hosts.ts).
import { connect as netConnect, type Socket } from 'node:net';
import type { Readable } from 'node:stream';
import { connect as tlsConnect } from 'node:tls';
import { Agent, request } from 'undici';
import { errors, RftError } from '../../../errors.js';

export const DOCKER_API = 'v1.41'; // Docker 20.10; newer daemons accept older API versions

export interface DockerTls {
  ca?: Buffer;
  cert?: Buffer;
  key?: Buffer;
  /** Check the engine's certificate against `ca` (DOCKER_TLS_VERIFY). */
  verify: boolean;
}

export interface DockerEndpoint {
  /** How the engine was named in the configuration (unix:///var/run/docker.sock, tcp://10.0.0.2:2376). */
  url: string;
  socketPath?: string;
  host?: string;
  port?: number;
  tls?: DockerTls;
}

/** Light calls (inspect, exec create, kill) answer in milliseconds on a healthy engine. */
export const QUICK_TIMEOUT_MS = 15_000;
/** Container create/start/remove can take seconds on a busy engine. */
export const SLOW_TIMEOUT_MS = 120_000;

type Method = 'GET' | 'POST' | 'PUT' | 'DELETE' | 'HEAD';

export interface CallOptions {
  /** Statuses >= 300 that are answers, not errors (404 on a remove, 304 on a start). */
  ok?: number[];
  timeoutMs?: number;
  /** Longest silence while the body streams (default: timeoutMs; 0: none). */
  idleMs?: number;
  /** A request body that is not JSON (a tar stream for PUT /archive). */
  raw?: { body: Readable | Buffer; contentType: string };
  /** Aborts the request: its connection is closed, which the engine takes as the client gone (a build is cancelled). */
  signal?: AbortSignal;
}

/** Thrown when the engine did not answer (refused, reset, timed out): the caller may mark it down. */
export class EngineUnreachable extends Error {}

/**
 * The engine answered with a status the caller did not expect: RFT_ERR_SANDBOX (500), with the
 * status and the path kept as fields, so callers tell a gone container (404) or a stopped one (409)
 * apart without reading the message.
 */
export class DockerStatusError extends RftError {
  constructor(
    readonly dockerStatus: number,
    /** The API path, without its query. */
    readonly path: string,
    message: string,
  ) {
    super(errors.sandboxFailed.code, errors.sandboxFailed.statusCode, message);
  }
}

export function endpointOf(target: string | DockerEndpoint): DockerEndpoint {
  return typeof target === 'string' ? { url: `unix://${target}`, socketPath: target } : target;
}

export class DockerApi {
  readonly endpoint: DockerEndpoint;
  private readonly agent: Agent;
  private readonly origin: string;

  constructor(target: string | DockerEndpoint) {
    this.endpoint = endpointOf(target);
    const e = this.endpoint;
    const tls = e.tls;
    if (e.socketPath) {
      this.origin = 'http://docker';
      this.agent = new Agent({ connect: { socketPath: e.socketPath }, connections: 32, keepAliveTimeout: 30_000 });
    } else {
      this.origin = `${tls ? 'https' : 'http'}://${e.host}:${e.port}`;
      this.agent = new Agent({
        connect: { timeout: 5_000, ...(tls ? tlsOptions(tls, e.host as string) : {}) },
        connections: 32,
        keepAliveTimeout: 30_000,
      });
    }
  }

  /** For messages: the configured address. */
  get url(): string {
    return this.endpoint.url;
  }

  /** Calls the API; returns the parsed JSON body (or null), throws RFT_ERR_SANDBOX on an unexpected status. */
  async call<T = unknown>(method: Method, path: string, body?: unknown, opts: CallOptions | number[] = {}): Promise<{ status: number; body: T; headers: Record<string, unknown> }> {
    const o = Array.isArray(opts) ? { ok: opts } : opts;
    const res = await this.send(method, path, body, o);
    const text = await res.body.text();
    const isJson = String(res.headers['content-type'] ?? '').includes('json');
    let parsed: T;
    try {
      parsed = (text && isJson ? JSON.parse(text) : text || null) as T;
    } catch {
      parsed = text as T;
    }
    if (res.statusCode >= 300 && !(o.ok ?? []).includes(res.statusCode)) {
      const msg = (parsed as { message?: string } | null)?.message ?? text;
      const bare = path.split('?')[0] as string;
      throw new DockerStatusError(res.statusCode, bare, `docker ${method} ${bare}: ${res.statusCode} ${msg}`);
    }
    return { status: res.statusCode, body: parsed, headers: res.headers };
  }

  /**
   * Removes a container, its processes and its anonymous volumes (force: running or not); one that is
   * already gone (404) or already being removed (409) is fine.
   */
  async removeContainer(name: string): Promise<void> {
    await this.call('DELETE', `/containers/${name}?force=true&v=true`, undefined, { ok: [404, 409], timeoutMs: SLOW_TIMEOUT_MS });
  }

  /**
   * A streamed response body (GET /archive, /events); the caller consumes or destroys it. `idleMs`
   * bounds the silence between chunks (0: none, for an event stream).
   */
  async stream(path: string, timeoutMs = SLOW_TIMEOUT_MS, idleMs = timeoutMs): Promise<{ status: number; body: Readable; headers: Record<string, unknown> }> {
    const res = await this.send('GET', path, undefined, { timeoutMs, idleMs });
    if (res.statusCode >= 300) {
      const text = await res.body.text().catch(() => '');
      const bare = path.split('?')[0] as string;
      throw new DockerStatusError(res.statusCode, bare, `docker GET ${bare}: ${res.statusCode} ${text.slice(0, 300)}`);
    }
    return { status: res.statusCode, body: res.body, headers: res.headers };
  }

  private async send(method: Method, path: string, body: unknown, o: CallOptions) {
    const timeout = o.timeoutMs ?? QUICK_TIMEOUT_MS;
    try {
      return await request(`${this.origin}/${DOCKER_API}${path}`, {
        method,
        dispatcher: this.agent,
        headersTimeout: timeout,
        bodyTimeout: o.idleMs ?? timeout,
        headers: o.raw ? { 'content-type': o.raw.contentType } : body !== undefined ? { 'content-type': 'application/json' } : {},
        ...(o.raw ? { body: o.raw.body } : body !== undefined ? { body: JSON.stringify(body) } : {}),
        ...(o.signal ? { signal: o.signal } : {}),
      });
    } catch (e) {
      throw new EngineUnreachable(`docker engine ${this.url} did not answer ${method} ${path.split('?')[0]}: ${(e as Error).message}`, { cause: e });
    }
  }

  /** A raw connection to the engine (for the hijacked exec streams), connected or failed. */
  connect(timeoutMs = 5_000): Promise<Socket> {
    const e = this.endpoint;
    return new Promise<Socket>((resolve, reject) => {
      const sock = e.socketPath
        ? netConnect({ path: e.socketPath, allowHalfOpen: true })
        : e.tls
          ? tlsConnect({ host: e.host as string, port: e.port as number, ...tlsOptions(e.tls, e.host as string) })
          : netConnect({ host: e.host as string, port: e.port as number, allowHalfOpen: true });
      const timer = setTimeout(() => sock.destroy(new Error(`connect timed out after ${timeoutMs} ms`)), timeoutMs);
      const fail = (err: Error): void => {
        clearTimeout(timer);
        reject(new EngineUnreachable(`docker engine ${this.url}: ${err.message}`));
      };
      sock.once('error', fail);
      sock.once(e.tls && !e.socketPath ? 'secureConnect' : 'connect', () => {
        clearTimeout(timer);
        sock.off('error', fail);
        resolve(sock);
      });
    });
  }

  close(): Promise<void> {
    return this.agent.close();
  }
}

function tlsOptions(tls: DockerTls, host: string) {
  return {
    ...(tls.ca ? { ca: tls.ca } : {}),
    ...(tls.cert ? { cert: tls.cert } : {}),
    ...(tls.key ? { key: tls.key } : {}),
    rejectUnauthorized: tls.verify,
    servername: /^[\d.]+$|:/.test(host) ? '' : host,
  };
}
