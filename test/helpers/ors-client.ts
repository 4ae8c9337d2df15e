// The ORS reference client, replayed on the wire as its source does it, with the headers aiohttp adds
// (test/fixtures/ors/sdk-requests.json holds the bytes the real client sent, and test/doors/ors/wire.test.ts
// replays them). Cited at openrewardstandard/python-sdk a399408:
// - src/ors/client/_http.py `request_retryable`: headers User-Agent (ors-sdk/0.1.0), X-API-Key (the token),
//   X-Session-ID (the sid), then aiohttp's Accept: */* and Accept-Encoding: gzip, deflate (", br" and
//   ", zstd" too where Brotli and zstandard are installed; the server compresses nothing); a JSON body is
//   json.dumps'ed (", " and ": ") as application/json; a POST without one is sent with Content-Length: 0 and
//   Content-Type: application/octet-stream (aiohttp's default). 3 tries, waits 1 s then 2 s
//   (wait_exponential min 1), on any aiohttp.ClientError (ClientResponseError is one: every non-2xx status
//   but 401, which raises AuthenticationError at once).
// - `_parse_sse_events`: lines without "\r\n"; a blank line yields (event, data lines joined by "\n") when an
//   event was named; ':' lines skipped; `field, value = line.split(":", 1)`, value.lstrip().
// - `resumable_sse`: POST with Accept: text/event-stream, sock_read timeout 30 s (heartbeat_timeout);
//   payload["task_id"] = the last task_id seen, on every attempt; `task_id` events remember it, `chunk`s are
//   kept, `end` joins chunks + its data (empty -> None, else json.loads); `error` raises (final); a stream
//   ending without `end` is ClientPayloadError (retried); statuses 429 and >= 500 and connection errors
//   retried after min(10, 0.5 * 2^(attempt-1)) s; other statuses raise; attempt resets on every 2xx connect;
//   past max_retries, MaxRetriesError.
// - src/ors/client/_session.py `__aenter__`: resumable_sse("/create_session", json={}, max_retries=3); sid =
//   the end's `sid`, else the task_id event's; then session.py `_post_create`: POST /create {split, index}
//   (no env_name) or {task_spec, env_name}; a ping task POSTs /ping at once, then 10 s after each ping began
//   (_ping.py); a ping failing its 3 tries kills the session: every call then raises SessionTerminatedError,
//   one running meanwhile too (`_run_or_die`); `__aexit__`: POST /delete (_pre_delete), then POST
//   /delete_session, their failures swallowed (kept in `swallowed` here, for tests to see).
// - src/ors/client/session.py: get_prompt GET /{env}/prompt; list_tools GET /{env}/task_tools, on 404
//   GET /{env}/tools; call_tool resumable_sse("/{env}/call", {name, input}, max_retries=5) -> ok ? ToolOutput :
//   raise ToolCallError(error).
// - src/ors/client/environment.py: catalogue calls each open an ephemeral sid (/create_session, then
//   /delete_session, its failure swallowed): GET /{env}/splits ([{name}]), POST /{env}/tasks, /num_tasks,
//   /task, /task_range, GET /{env}/tools.
import { recordingProxy as recordWire } from '../fixtures/record-proxy.js';
import http from 'node:http';
import net from 'node:net';
import { pyJsonDumps } from './reward-clients.js';

/** The client's User-Agent (src/ors/_version.py). */
export const ORS_USER_AGENT = 'ors-sdk/0.1.0';

export interface ToolOutput {
  blocks: { type: string; text: string }[];
  metadata: Record<string, unknown> | null;
  reward: number | null;
  finished: boolean;
}

export class HttpStatusError extends Error {
  constructor(
    readonly status: number,
    readonly body: string,
  ) {
    super(`HTTP ${status}: ${body}`);
  }
}
export class AuthenticationError extends Error {}
export class ToolCallError extends Error {}
export class SseError extends Error {}
export class MaxRetriesError extends Error {}
export class SessionTerminatedError extends Error {}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface ClientOptions {
  token?: string | undefined;
  /** Called on each SSE connection once it has its reply (a test drops the stream there). */
  onStream?: (ctx: { path: string; attempt: number; req: http.ClientRequest; events: [string, string][] }) => void;
  /** Told each comment line (a ping), which the client itself skips. */
  onComment?: (line: string) => void;
  /** The waits between tries, scaled (tests that exercise retries need not wait whole seconds). */
  waitScale?: number;
  /** The ping task's period (the client's is 10 s). */
  pingMs?: number;
}

interface Raw {
  status: number;
  text: string;
}

export class OrsClient {
  /** Every sid this client was given, in order. */
  readonly sids: string[] = [];
  /** What the client swallowed: its /delete and /delete_session failures. */
  readonly swallowed: unknown[] = [];

  constructor(
    readonly base: string,
    readonly o: ClientOptions = {},
  ) {}

  /** The client's headers and aiohttp's, in their order: a POST's body is JSON, or none labelled application/octet-stream. */
  private headers(method: string, sid: string | undefined, body: Buffer | undefined, sse = false): Record<string, string> {
    return {
      ...(sse ? { Accept: 'text/event-stream' } : {}),
      'User-Agent': ORS_USER_AGENT,
      ...(this.o.token !== undefined ? { 'X-API-Key': this.o.token } : {}),
      ...(sid ? { 'X-Session-ID': sid } : {}),
      ...(sse ? {} : { Accept: '*/*' }),
      'Accept-Encoding': 'gzip, deflate',
      ...(body ? { 'Content-Length': String(body.length), 'Content-Type': 'application/json' } : method === 'POST' ? { 'Content-Length': '0', 'Content-Type': 'application/octet-stream' } : {}),
    };
  }

  private once(method: string, path: string, json: unknown, sid?: string): Promise<Raw> {
    const body = json === undefined ? undefined : Buffer.from(pyJsonDumps(json));
    return new Promise((resolve, reject) => {
      const req = http.request(new URL(path, this.base), { method, agent: false, headers: this.headers(method, sid, body) });
      req.on('error', reject);
      req.on('response', (res) => {
        const parts: Buffer[] = [];
        res.on('data', (c: Buffer) => parts.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(parts).toString('utf8') }));
        res.on('error', reject);
      });
      req.end(body);
    });
  }

  /** request_retryable: 3 tries on anything but a 401; the reply's JSON, or null without `expectJson`. */
  async request(method: string, path: string, json?: unknown, sid?: string, expectJson = true): Promise<unknown> {
    let last: unknown;
    for (let attempt = 1; attempt <= 3; attempt++) {
      try {
        const r = await this.once(method, path, json, sid);
        if (r.status === 401) throw new AuthenticationError(`Authentication failed (401): ${r.text}`);
        if (r.status < 200 || r.status >= 300) throw new HttpStatusError(r.status, r.text);
        return expectJson ? (JSON.parse(r.text) as unknown) : null;
      } catch (e) {
        if (e instanceof AuthenticationError) throw e;
        last = e;
      }
      if (attempt < 3) await sleep(Math.min(10, 2 ** (attempt - 1)) * 1000 * (this.o.waitScale ?? 1));
    }
    throw last;
  }

  /** resumable_sse, as _http.py runs it. */
  async sse(path: string, json: Record<string, unknown>, o: { sid?: string; maxRetries?: number; onEvent?: (e: string, d: string) => void } = {}): Promise<unknown> {
    const payload = { ...json };
    let taskId: string | undefined;
    let attempt = 0;
    const errors: unknown[] = [];
    for (let connects = 1; ; connects++) {
      if (taskId) payload.task_id = taskId;
      try {
        const r = await this.streamOnce(path, payload, o.sid, connects, (event, data) => {
          o.onEvent?.(event, data);
          if (event === 'task_id') taskId = data.trim();
        });
        if (r.kind === 'status') {
          if (r.status === 401) throw new AuthenticationError(`Authentication failed (401): ${r.text}`);
          if (r.status !== 429 && r.status < 500) throw new HttpStatusError(r.status, r.text);
          errors.push(new HttpStatusError(r.status, r.text));
        } else {
          attempt = 0;
          if (r.kind === 'end') return r.value;
          if (r.kind === 'error') throw new SseError(r.data || 'Unknown SSE error');
          errors.push(new Error('Stream ended unexpectedly'));
        }
      } catch (e) {
        if (e instanceof AuthenticationError || e instanceof HttpStatusError || e instanceof SseError) throw e;
        errors.push(e);
      }
      attempt++;
      if (o.maxRetries !== undefined && attempt > o.maxRetries) throw new MaxRetriesError(`Exceeded ${o.maxRetries} retries for ${path}: ${errors.map(String).join('; ')}`);
      await sleep(Math.min(10, 0.5 * 2 ** (attempt - 1)) * 1000 * (this.o.waitScale ?? 1));
    }
  }

  /** One connection: its status, or the stream read to its end, its error event or its break. */
  private streamOnce(
    path: string,
    payload: Record<string, unknown>,
    sid: string | undefined,
    attempt: number,
    onEvent: (event: string, data: string) => void,
  ): Promise<{ kind: 'status'; status: number; text: string } | { kind: 'end'; value: unknown } | { kind: 'error'; data: string } | { kind: 'broken' }> {
    const body = Buffer.from(pyJsonDumps(payload));
    return new Promise((resolve, reject) => {
      const req = http.request(new URL(path, this.base), { method: 'POST', agent: false, headers: this.headers('POST', sid, body, true) });
      // sock_read=30 s: no byte for that long is asyncio.TimeoutError (HeartbeatTimeoutError, final).
      req.setTimeout(30_000, () => req.destroy(new Error('HeartbeatTimeoutError')));
      let settled = false;
      const done = (v: Parameters<typeof resolve>[0]) => {
        if (settled) return;
        settled = true;
        resolve(v);
      };
      let answered = false;
      // A connection that never got a reply (refused, reset) is a failed connect, counted toward the 5;
      // one cut after its reply began is a broken stream, whose reconnect starts the count again.
      req.on('error', (e) => (settled ? undefined : e.message === 'HeartbeatTimeoutError' || !answered ? reject(e) : done({ kind: 'broken' })));
      req.on('response', (res) => {
        answered = true;
        const status = res.statusCode ?? 0;
        if (status < 200 || status >= 300) {
          const parts: Buffer[] = [];
          res.on('data', (c: Buffer) => parts.push(c));
          res.on('end', () => done({ kind: 'status', status, text: Buffer.concat(parts).toString('utf8') }));
          return;
        }
        const events: [string, string][] = [];
        let buf = '';
        let event: string | undefined;
        let data: string[] = [];
        const chunks: string[] = [];
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          buf += c;
          for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
            const line = buf.slice(0, nl).replace(/\r$/, '');
            buf = buf.slice(nl + 1);
            if (settled) return;
            if (line === '') {
              if (event) {
                const joined = data.join('\n');
                events.push([event, joined]);
                onEvent(event, joined);
                if (event === 'chunk') chunks.push(joined);
                else if (event === 'end') {
                  chunks.push(joined);
                  const all = chunks.join('');
                  done({ kind: 'end', value: all ? (JSON.parse(all) as unknown) : null });
                } else if (event === 'error') done({ kind: 'error', data: joined });
                this.o.onStream?.({ path, attempt, req, events });
              }
              event = undefined;
              data = [];
              continue;
            }
            if (line.startsWith(':')) {
              this.o.onComment?.(line);
              continue;
            }
            const colon = line.indexOf(':');
            const field = line.slice(0, colon);
            const value = line.slice(colon + 1).trimStart();
            if (field === 'event') event = value;
            else if (field === 'data') data.push(value);
          }
        });
        res.on('end', () => done({ kind: 'broken' }));
        res.on('error', () => done({ kind: 'broken' }));
        res.on('close', () => done({ kind: 'broken' }));
      });
      req.end(body);
    });
  }

  /** An ephemeral sid around a catalogue call (environment.py `_sid_provider`). */
  async withSid<T>(fn: (sid: string) => Promise<T>): Promise<T> {
    let sid: string | undefined;
    await this.sse('/create_session', {}, { maxRetries: 3, onEvent: (e, d) => (e === 'task_id' ? (sid = d.trim()) : undefined) });
    this.sids.push(sid!);
    try {
      return await fn(sid!);
    } finally {
      await this.swallow(this.request('POST', '/delete_session', undefined, sid, false));
    }
  }

  private async swallow(p: Promise<unknown>): Promise<void> {
    await p.catch((e: unknown) => void this.swallowed.push(e));
  }

  listSplits = (env: string) => this.withSid(async (sid) => ((await this.request('GET', `/${env}/splits`, undefined, sid)) as { name: string }[]).map((s) => s.name));
  numTasks = (env: string, split: string) => this.withSid(async (sid) => ((await this.request('POST', `/${env}/num_tasks`, { split }, sid)) as { num_tasks: number }).num_tasks);
  getTask = (env: string, split: string, index: number) => this.withSid(async (sid) => ((await this.request('POST', `/${env}/task`, { split, index }, sid)) as { task: Record<string, unknown> }).task);
  listTasks = (env: string, split: string) => this.withSid(async (sid) => (await this.request('POST', `/${env}/tasks`, { split }, sid)) as { tasks: Record<string, unknown>[]; env_name: string });
  taskRange = (env: string, split: string, start?: number, stop?: number) =>
    this.withSid(async (sid) => ((await this.request('POST', `/${env}/task_range`, { split, ...(start !== undefined ? { start } : {}), ...(stop !== undefined ? { stop } : {}) }, sid)) as { tasks: Record<string, unknown>[] }).tasks);
  listTools = (env: string) => this.withSid(async (sid) => (await this.request('GET', `/${env}/tools`, undefined, sid)) as { tools: { name: string; description: string; input_schema: unknown }[] });

  /** AsyncSession as a context: created, used, deleted. */
  async session<T>(env: string, task: { split: string; index: number } | { task_spec: Record<string, unknown> }, fn: (s: OrsSession) => Promise<T>): Promise<T> {
    let pending: string | undefined;
    const res = (await this.sse('/create_session', {}, { maxRetries: 3, onEvent: (e, d) => (e === 'task_id' ? (pending = d.trim()) : undefined) })) as { sid?: string } | null;
    const sid = res?.sid ?? pending!;
    this.sids.push(sid);
    await this.request('POST', '/create', 'task_spec' in task ? { task_spec: task.task_spec, env_name: env } : { split: task.split, index: task.index }, sid);
    const s = new OrsSession(this, env, sid);
    try {
      return await fn(s);
    } finally {
      s.stopPings();
      await this.swallow(this.request('POST', '/delete', undefined, sid, false));
      await this.swallow(this.request('POST', '/delete_session', undefined, sid, false));
    }
  }
}

export class OrsSession {
  private hasTaskTools = true;
  private pinging = true;
  private wake: NodeJS.Timeout | undefined;
  /** Set once a ping failed its tries (`_mark_dead`): every call from then on raises it. */
  dead: SessionTerminatedError | undefined;
  private readonly died: Promise<never>;
  /** Pings that succeeded. */
  pings = 0;

  constructor(
    private readonly c: OrsClient,
    readonly env: string,
    readonly sid: string,
  ) {
    let kill!: (e: SessionTerminatedError) => void;
    this.died = new Promise<never>((_, reject) => (kill = reject));
    this.died.catch(() => undefined);
    void this.ping(kill);
  }

  /** _ping.py's loop: a ping at once, the next `pingMs` after this one began; its failure kills the session. */
  private async ping(kill: (e: SessionTerminatedError) => void): Promise<void> {
    const period = this.c.o.pingMs ?? 10_000;
    while (this.pinging) {
      const started = Date.now();
      try {
        await this.c.request('POST', '/ping', undefined, this.sid, false);
        this.pings++;
      } catch (e) {
        if (!this.pinging) return;
        this.dead = new SessionTerminatedError(`Session terminated (sid='${this.sid}'): ${String(e)}`);
        kill(this.dead);
        return;
      }
      if (!this.pinging) return;
      await new Promise<void>((r) => (this.wake = setTimeout(r, Math.max(0, period - (Date.now() - started)))));
    }
  }

  stopPings(): void {
    this.pinging = false;
    clearTimeout(this.wake);
  }

  /** `_run_or_die`: a dead session raises, and a call running when it dies raises then. */
  private runOrDie<T>(p: Promise<T>): Promise<T> {
    if (this.dead) {
      p.catch(() => undefined);
      return Promise.reject(this.dead);
    }
    return Promise.race([p, this.died]);
  }

  async getPrompt(): Promise<{ type: string; text: string }[]> {
    return (await this.runOrDie(this.c.request('GET', `/${this.env}/prompt`, undefined, this.sid))) as { type: string; text: string }[];
  }

  async listTools(): Promise<{ name: string; description: string; input_schema: unknown }[]> {
    if (this.hasTaskTools) {
      try {
        return ((await this.runOrDie(this.c.request('GET', `/${this.env}/task_tools`, undefined, this.sid))) as { tools: [] }).tools;
      } catch (e) {
        if (!(e instanceof HttpStatusError && e.status === 404)) throw e;
        this.hasTaskTools = false;
      }
    }
    return ((await this.runOrDie(this.c.request('GET', `/${this.env}/tools`, undefined, this.sid))) as { tools: [] }).tools;
  }

  async callTool(name: string, input: Record<string, unknown> = {}): Promise<ToolOutput> {
    const res = (await this.runOrDie(this.c.sse(`/${this.env}/call`, { name, input }, { sid: this.sid, maxRetries: 5 }))) as { ok: boolean; output: ToolOutput; error: string };
    if (res.ok) return { blocks: res.output.blocks, metadata: res.output.metadata, reward: res.output.reward, finished: res.output.finished };
    throw new ToolCallError(res.error);
  }
}

/** TRL's _RolloutEnvironment._call_ors_tool (trl/experimental/openreward/environment.py): any exception is "Error: ...", reward = last non-null. */
export class TrlRollout {
  reward = 0;
  rewards: (number | null)[] = [];
  finished = false;

  constructor(private readonly s: OrsSession) {}

  async call(name: string, input: Record<string, unknown>): Promise<string> {
    let out: ToolOutput;
    try {
      out = await this.s.callTool(name, input);
    } catch (e) {
      this.rewards.push(null);
      return `Error: ${(e as Error).message}`;
    }
    const text = out.blocks.filter((b) => b.type === 'text' && b.text).map((b) => b.text).join('\n') || '(no output)';
    this.rewards.push(out.reward);
    if (out.reward !== null) this.reward = out.reward;
    this.finished = out.finished;
    return text;
  }
}

/** A proxy to `target` that keeps, byte for byte, every request a client sends through it (test/fixtures/record-proxy.ts). */
export async function recordingProxy(target: string): Promise<{ url: string; readonly requests: Buffer[]; close(): Promise<void> }> {
  const proxy = await recordWire(target);
  return {
    url: proxy.url,
    get requests() {
      return proxy.requests.map((r) => r.bytes);
    },
    close: () => proxy.close(),
  };
}

/** One reply read off a socket the request was written to as is: its status, headers and body (Content-Length or chunked). */
export async function rawExchange(url: string, request: Buffer, timeoutMs = 30_000): Promise<{ status: number; headers: Record<string, string>; body: string }> {
  const { hostname, port } = new URL(url);
  const s = net.connect(Number(port), hostname);
  s.write(request);
  let data = Buffer.alloc(0);
  try {
    return await new Promise((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`no whole reply within ${timeoutMs} ms: ${data.toString().slice(0, 300)}`)), timeoutMs);
      const parse = (): boolean => {
        const end = data.indexOf('\r\n\r\n');
        if (end < 0) return false;
        const [status, ...lines] = data.subarray(0, end).toString('latin1').split('\r\n');
        const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
        let rest = data.subarray(end + 4);
        let body: Buffer;
        if (headers['transfer-encoding'] === 'chunked') {
          const parts: Buffer[] = [];
          for (;;) {
            const nl = rest.indexOf('\r\n');
            if (nl < 0) return false;
            const size = parseInt(rest.subarray(0, nl).toString(), 16);
            if (rest.length < nl + 2 + size + 2) return false;
            if (size === 0) break;
            parts.push(rest.subarray(nl + 2, nl + 2 + size));
            rest = rest.subarray(nl + 2 + size + 2);
          }
          body = Buffer.concat(parts);
        } else {
          const length = Number(headers['content-length'] ?? 0);
          if (rest.length < length) return false;
          body = rest.subarray(0, length);
        }
        clearTimeout(t);
        resolve({ status: Number(status!.split(' ')[1]), headers, body: body.toString('utf8') });
        return true;
      };
      s.on('data', (d: Buffer) => {
        data = Buffer.concat([data, d]);
        parse();
      });
      s.on('error', reject);
      s.on('close', () => (parse() ? undefined : reject(new Error(`closed before a whole reply: ${data.toString().slice(0, 300)}`))));
    });
  } finally {
    s.destroy();
  }
}

/** A recorded request with the run's own values as placeholders: {{HOST}}, {{KEY}}, {{SID1}}, {{SID2}}... in order of first use. */
export function toFixture(requests: Buffer[], o: { host: string; key: string }): string[] {
  const sids: string[] = [];
  return requests.map((r) => {
    let text = r.toString('utf8').replaceAll(o.host, '{{HOST}}').replaceAll(o.key, '{{KEY}}');
    const sid = /^X-Session-ID: (\S+)\r$/im.exec(text)?.[1];
    if (sid && !sids.includes(sid)) sids.push(sid);
    sids.forEach((s, i) => (text = text.replaceAll(s, `{{SID${i + 1}}}`)));
    return text;
  });
}
