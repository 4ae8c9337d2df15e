// The emulator's client for the NeMo Gym door, replaying Gym's own (nemo_gym/server_utils.py,
// Gym 07d6b0d): JSON bodies, no key and no other header, no cookie jar (DummyCookieJar): the caller
// passes the cookies to send and gets back only those the reply set. Gym retries a transport error
// forever, 0.5 s apart, and never retries a status; the emulator gives up after TRANSPORT_RETRY_MS so
// that a door that is down fails the rollout instead of stalling the run.
import { Agent, request, type Dispatcher } from 'undici';
import { errors } from '../../errors.js';

export type Cookies = ReadonlyMap<string, string>;

export interface DoorReply {
  status: number;
  text: string;
  /** The cookies this reply set (Set-Cookie), and no others: what aiohttp's `response.cookies` holds. */
  cookies: Cookies;
}

export const RETRY_INTERVAL_MS = 500;
export const TRANSPORT_RETRY_MS = 60_000;

/** `name=value` of each Set-Cookie header; attributes (Path, HttpOnly...) are not sent back. */
export function setCookies(header: string | string[] | undefined): Map<string, string> {
  const jar = new Map<string, string>();
  for (const line of header === undefined ? [] : Array.isArray(header) ? header : [header]) {
    const pair = line.split(';', 1)[0]!;
    const eq = pair.indexOf('=');
    if (eq > 0) jar.set(pair.slice(0, eq).trim(), pair.slice(eq + 1).trim());
  }
  return jar;
}

const reason = (e: unknown) => (e instanceof Error ? e.message : String(e));
/** An unreachable door names the option that gave its address, not --server. */
const DOOR_URL_HINT = '--door-url URL: the NeMo Gym listener, RFT_NEMO_GYM_HOST:RFT_NEMO_GYM_PORT';

export class GymDoorClient {
  readonly baseUrl: string;
  private readonly agent: Agent;

  constructor(
    baseUrl: string,
    private readonly opts: { retryForMs?: number; headers?: Record<string, string> } = {},
  ) {
    this.baseUrl = baseUrl.replace(/\/+$/, '');
    // Gym's client has no timeout at all (ClientTimeout()); a tool may take up to 10 minutes here.
    this.agent = new Agent({ connections: 128, headersTimeout: 11 * 60_000, bodyTimeout: 11 * 60_000 });
  }

  /** One request; `body` undefined sends none. Any status is a reply; transport errors are retried. */
  async send(method: 'GET' | 'POST', path: string, body: unknown, cookies: Cookies = new Map()): Promise<DoorReply> {
    const headers: Record<string, string> = { ...this.opts.headers };
    const raw = body === undefined ? undefined : JSON.stringify(body);
    if (raw !== undefined) headers['content-type'] = 'application/json';
    if (cookies.size > 0) headers.cookie = [...cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    const deadline = Date.now() + (this.opts.retryForMs ?? TRANSPORT_RETRY_MS);
    let res: Dispatcher.ResponseData;
    for (;;) {
      try {
        res = await request(this.baseUrl + path, { method, headers, ...(raw !== undefined ? { body: raw } : {}), dispatcher: this.agent });
        break;
      } catch (e) {
        if (Date.now() >= deadline) throw errors.serverUnreachable(this.baseUrl, `${reason(e)}; Gym would retry forever`, DOOR_URL_HINT);
        await new Promise((r) => setTimeout(r, RETRY_INTERVAL_MS));
      }
    }
    // Gym reads the body after request() has returned: a body cut off is not retried.
    try {
      return { status: res.statusCode, text: await res.body.text(), cookies: setCookies(res.headers['set-cookie']) };
    } catch (e) {
      throw errors.serverUnreachable(this.baseUrl, `the reply to ${path} was cut off: ${reason(e)}`, DOOR_URL_HINT);
    }
  }

  /** Before any work: the door answers GET / (any status), as ng_run waits for it; no retry. */
  async check(): Promise<void> {
    try {
      const res = await request(this.baseUrl + '/', { method: 'GET', dispatcher: this.agent });
      await res.body.dump();
    } catch (e) {
      throw errors.serverUnreachable(this.baseUrl, reason(e), DOOR_URL_HINT);
    }
  }

  close(): Promise<void> {
    return this.agent.close();
  }
}
