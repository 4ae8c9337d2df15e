// The CLI's client for an rft-endpoints server: one keep-alive pool, and either a bearer key or a
// Standard Webhooks signature per request (a fresh webhook-id each time, since the server refuses
// an id it has already seen).
import { randomUUID } from 'node:crypto';
import { Agent, request } from 'undici';
import { loadCliEnv } from '../../config.js';
import { errors } from '../../errors.js';
import { tlsFailure } from '../tls-failure.js';
import { signWebhook } from '../../authentication/webhooks.js';
import { DEFAULT_SERVER, type ServerOptions } from '../server-options.js';

export interface ServerAuth {
  key?: string;
  signingSecret?: string;
}

export interface ServerReply {
  status: number;
  text: string;
}

// Tools may run up to 10 minutes (wire contract); leave headroom before undici gives up.
const CALL_TIMEOUT_MS = 11 * 60_000;

export class ServerClient {
  readonly baseUrl: string;
  private readonly auth: ServerAuth;
  private readonly agent: Agent;

  /** Sent with every request (rollout --run: x-rft-run). */
  private readonly headers: Record<string, string>;

  constructor(baseUrl: string, auth: ServerAuth, opts: { connections?: number; headers?: Record<string, string> } = {}) {
    this.headers = opts.headers ?? {};
    this.baseUrl = baseUrl.replace(/\/+$/, '');
    this.auth = auth;
    this.agent = new Agent({
      connections: opts.connections ?? 128,
      headersTimeout: CALL_TIMEOUT_MS,
      bodyTimeout: CALL_TIMEOUT_MS,
    });
  }

  /** Sends one request; any HTTP status is a reply, only a transport failure throws. */
  async send(method: 'GET' | 'POST' | 'DELETE', path: string, body?: unknown): Promise<ServerReply> {
    const raw = body === undefined ? undefined : JSON.stringify(body);
    const headers: Record<string, string> = { ...this.headers, accept: 'application/json' };
    if (raw !== undefined) headers['content-type'] = 'application/json';
    if (this.auth.signingSecret) {
      const id = `msg_${randomUUID()}`;
      const ts = Math.floor(Date.now() / 1000);
      headers['webhook-id'] = id;
      headers['webhook-timestamp'] = String(ts);
      // GETs are signed over the empty body so management calls work with a secret alone.
      headers['webhook-signature'] = signWebhook(this.auth.signingSecret, id, ts, raw ?? '');
    } else if (this.auth.key) {
      headers.authorization = `Bearer ${this.auth.key}`;
    }
    try {
      const res = await request(this.baseUrl + path, {
        method,
        headers,
        ...(raw !== undefined ? { body: raw } : {}),
        dispatcher: this.agent,
      });
      return { status: res.statusCode, text: await res.body.text() };
    } catch (e) {
      throw tlsFailure(this.baseUrl, e) ?? errors.serverUnreachable(this.baseUrl, transportReason(e));
    }
  }

  /** A JSON reply from a 2xx, or a coded error naming what was asked. */
  async json<T>(method: 'GET' | 'POST' | 'DELETE', path: string, body?: unknown): Promise<T> {
    const reply = await this.send(method, path, body);
    if (reply.status === 401) throw errors.serverAuth(this.baseUrl, errorCodeOf(reply.text) ?? '401');
    if (reply.status < 200 || reply.status >= 300) throw errors.serverReply(`${method} ${path}`, reply.status, reply.text);
    try {
      return JSON.parse(reply.text) as T;
    } catch {
      throw errors.serverReply(`${method} ${path}`, reply.status, `not JSON: ${reply.text}`);
    }
  }

  /** Before any work: the server answers, and accepts this credential (an authenticated GET). */
  async check(): Promise<void> {
    await this.json('GET', '/v1/tools');
  }

  close(): Promise<void> {
    return this.agent.close();
  }
}

/** `ECONNREFUSED`, `ENOTFOUND`, a timeout...: the innermost system code undici reports. */
function transportReason(e: unknown): string {
  let cur = e as { code?: unknown; cause?: unknown; message?: unknown } | undefined;
  let reason = e instanceof Error ? e.message : String(e);
  for (let depth = 0; cur && depth < 5; depth++, cur = cur.cause as typeof cur) {
    if (typeof cur.code === 'string' && /^E[A-Z]+$/.test(cur.code)) reason = cur.code;
    else if (typeof cur.code === 'string' && cur.code.startsWith('UND_ERR')) reason = `${cur.code}: ${String(cur.message)}`;
  }
  return reason;
}

/** The RFT_ERR_* code of an error reply, if it has one. */
function errorCodeOf(text: string): string | undefined {
  try {
    const code = (JSON.parse(text) as { error?: { code?: unknown } }).error?.code;
    return typeof code === 'string' ? code : undefined;
  } catch {
    return undefined;
  }
}

export function clientFrom(opts: ServerOptions, connections?: number, headers?: Record<string, string>): ServerClient {
  const env = loadCliEnv();
  const signingSecret = opts.signingSecret ?? env.RFT_SIGNING_SECRET;
  const key = opts.key ?? env.RFT_API_KEY;
  const auth: ServerAuth = signingSecret ? { signingSecret } : key ? { key } : {};
  return new ServerClient(opts.server ?? env.RFT_SERVER ?? DEFAULT_SERVER, auth, { ...(connections !== undefined ? { connections } : {}), ...(headers ? { headers } : {}) });
}
