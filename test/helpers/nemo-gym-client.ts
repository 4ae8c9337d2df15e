// NeMo Gym's clients, replayed on the wire as their source does it (nemo-gym needs Python >= 3.13.14
// and is not installable here). Cited at Gym 0.5.1 (NVIDIA-NeMo/Gym) and verifiers v1:
// - simple_agent (responses_api_agents/simple_agent/app.py, `run` and `_create_episode`): POST
//   /seed_session with the row; each function_call of the model, in order, one at a time, as
//   POST /{name} with body json.loads(arguments) (unparseable arguments never reach the server: the
//   agent writes the error itself); the reply body is the tool output whatever the status; after each
//   reply the cookies are replaced by that reply's own (`resources_server_cookies = api_response.cookies`:
//   aiohttp's ClientResponse.cookies, the Set-Cookie of that one reply; the global client has a
//   DummyCookieJar, nemo_gym/server_utils.py `set_global_aiohttp_client`); then POST /verify with the row
//   and `response`, whose `output` is the whole episode, with the last cookies (the model server's too).
//   Non-2xx on /seed_session or /verify raises (`raise_for_status`).
// - server_utils.py `request`: transport errors (ServerDisconnectedError, ClientOSError) retried
//   forever every 0.5 s with the same bytes; a status is never retried; no timeout (ClientTimeout()).
// - verifiers verifiers/v1/tasksets/nemo_gym/{taskset,toolset}.py: the seed reply's cookies kept for
//   the whole rollout (`state.cookies.update(response.cookies)`, a fresh httpx client per request);
//   60-s timeout (`request_timeout`); a non-2xx tool reply is `isError`.
// Gym's real ng_run + ng_collect_rollouts, installed by hand, and its recorded bytes: test/doors/nemo-gym/gym-wire.test.ts.
import http from 'node:http';
import { afterAll, beforeAll } from 'vitest';
import { startTestServer, type TestServer } from './server.js';

/** A test server with the NeMo Gym door on its own port, started before the suite and closed after it. */
export function withNemoGymDoor(env: Record<string, string> = {}): { readonly server: TestServer; readonly door: string } {
  const s = {} as { server: TestServer; door: string };
  beforeAll(async () => {
    s.server = await startTestServer({ env: { RFT_NEMO_GYM_PORT: '0', RFT_SQLITE_SYNC: 'normal', ...env } });
    s.door = s.server.app.rft.nemoGym!.url;
  });
  afterAll(() => s.server?.close());
  return s;
}

export type Cookies = Record<string, string>;

export interface Reply {
  status: number;
  text: string;
  /** This reply's own Set-Cookie, as aiohttp's ClientResponse.cookies. */
  cookies: Cookies;
}

function cookieHeader(c: Cookies): string | undefined {
  const parts = Object.entries(c).map(([k, v]) => `${k}=${v}`);
  return parts.length ? parts.join('; ') : undefined;
}

function setCookies(res: http.IncomingMessage): Cookies {
  const out: Cookies = {};
  for (const line of res.headers['set-cookie'] ?? []) {
    const [pair] = line.split(';');
    const eq = pair!.indexOf('=');
    if (eq > 0) out[pair!.slice(0, eq).trim()] = pair!.slice(eq + 1).trim();
  }
  return out;
}

export interface PostOptions {
  cookies?: Cookies;
  timeoutMs?: number;
  /** Called with the socket once the request is written (a test cuts the connection there). */
  onSent?: (req: http.ClientRequest) => void;
}

/** One request, once: a transport error rejects (the caller's retry rule decides). */
export function postOnce(base: string, path: string, json: unknown, o: PostOptions = {}): Promise<Reply> {
  const body = Buffer.from(JSON.stringify(json));
  const url = new URL(path, base);
  return new Promise((resolve, reject) => {
    const cookie = cookieHeader(o.cookies ?? {});
    const req = http.request(url, {
      method: 'POST',
      agent: false,
      headers: { 'content-type': 'application/json', 'content-length': body.length, ...(cookie ? { cookie } : {}) },
      ...(o.timeoutMs ? { timeout: o.timeoutMs } : {}),
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8'), cookies: setCookies(res) }));
    });
    req.end(body, () => o.onSent?.(req));
  });
}

/** server_utils.py `request`: a transport error is retried (same bytes) every 0.5 s; a status never is. */
export async function gymRequest(base: string, path: string, json: unknown, o: PostOptions = {}, maxTries = 40): Promise<Reply> {
  for (let attempt = 1; ; attempt++) {
    try {
      const { onSent: _cutOnlyTheFirst, ...retry } = o;
      return await postOnce(base, path, json, attempt === 1 ? o : retry);
    } catch (e) {
      if (attempt >= maxTries) throw e;
      await new Promise((r) => setTimeout(r, 500));
    }
  }
}

export interface FunctionCall {
  name: string;
  /** The model's arguments string (json.loads'ed by the agent before sending). */
  arguments: string;
}

/** One model turn: function calls, or a final assistant message. */
export type ModelTurn = { calls: FunctionCall[] } | { message: string };

export interface Episode {
  seed: Reply;
  tools: { call: FunctionCall; reply: Reply | undefined; output: string }[];
  verify: Reply;
  /** /verify's JSON when it answered 2xx. */
  result: Record<string, unknown> | undefined;
}

const message = (text: string) => ({
  type: 'message',
  role: 'assistant',
  id: 'msg_1',
  status: 'completed',
  content: [{ type: 'output_text', text, annotations: [] }],
});

/**
 * simple_agent's /run: `model(step, outputs)` plays the policy (it sees the tool outputs so far).
 * `modelCookies` are the model server's, forwarded with the resources server's to /verify.
 */
export async function simpleAgentRun(
  base: string,
  row: Record<string, unknown>,
  model: (step: number, outputs: string[]) => ModelTurn,
  o: { maxSteps?: number; modelCookies?: Cookies; request?: typeof gymRequest } = {},
): Promise<Episode> {
  const request = o.request ?? gymRequest;
  const seed = await request(base, '/seed_session', row);
  let cookies = seed.cookies;
  const output: Record<string, unknown>[] = [];
  const tools: Episode['tools'] = [];
  const outputs: string[] = [];
  if (seed.status < 300) {
    for (let step = 1; step <= (o.maxSteps ?? 25); step++) {
      const turn = model(step, outputs);
      if ('message' in turn) {
        output.push(message(turn.message));
        break;
      }
      for (const [i, call] of turn.calls.entries()) {
        const callId = `call_${step}_${i}`;
        output.push({ type: 'function_call', call_id: callId, name: call.name, arguments: call.arguments, id: `fc_${step}_${i}`, status: 'completed' });
        let text: string;
        let reply: Reply | undefined;
        try {
          const args: unknown = JSON.parse(call.arguments);
          reply = await request(base, `/${call.name}`, args, { cookies });
          text = reply.text;
          cookies = reply.cookies;
        } catch (e) {
          text = JSON.stringify({ error: `Invalid tool call arguments: ${(e as Error).message}` });
        }
        tools.push({ call, reply, output: text });
        outputs.push(text);
        output.push({ type: 'function_call_output', call_id: callId, output: text });
      }
    }
  }
  const response = { id: 'resp_1', created_at: 0, model: 'policy', object: 'response', output, parallel_tool_calls: false, tool_choice: 'auto', tools: [] };
  const verify = seed.status < 300 ? await request(base, '/verify', { ...row, response }, { cookies: { ...cookies, ...(o.modelCookies ?? {}) } }) : seed;
  return { seed, tools, verify, result: verify.status < 300 ? (JSON.parse(verify.text) as Record<string, unknown>) : undefined };
}

/** verifiers' NeMoGymState: the seed's cookies kept for the whole rollout, 60-s timeout, non-2xx tool replies are errors. */
export class VerifiersRollout {
  cookies: Cookies = {};
  constructor(
    private readonly base: string,
    private readonly row: Record<string, unknown>,
  ) {}

  async seed(): Promise<Reply> {
    const r = await postOnce(this.base, '/seed_session', this.row, { timeoutMs: 60_000 });
    Object.assign(this.cookies, r.cookies);
    return r;
  }

  async callTool(name: string, args: unknown): Promise<{ text: string; isError: boolean }> {
    const r = await postOnce(this.base, `/${name}`, args, { cookies: this.cookies, timeoutMs: 60_000 });
    return { text: r.text, isError: r.status < 200 || r.status >= 300 };
  }

  async verify(response: Record<string, unknown>): Promise<Reply> {
    return postOnce(this.base, '/verify', { ...this.row, response }, { cookies: this.cookies, timeoutMs: 60_000 });
  }
}
