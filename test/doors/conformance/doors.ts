// The eight doors of the conformance suite, each with a small driver that plays one episode in that
// door's own wire, through the replayed trainer clients of test/helpers: open a rollout, call a tool,
// submit an answer. Every reply is read as the door's trainer client reads it (/work docs:
// trainer-doors.md, docs/<door>.md) and classified once, here:
// - `output`: what the model reads (a tool's output or error observation),
// - `retry`: the client's retry or rerun signal for a failure of ours (a 5xx Agent RFT retries, MCP's
//   `retryable: true`, Gym's 5xx that reruns the rollout, an ORS stream the client reconnects until it
//   gives up, OpenEnv's `error` frame with `retryable: true`, the reward clients' retried 5xx, verl's 504),
// - `final`: a client mistake, answered so that no client retries it,
// - `transport`: no reply at all (the connection dropped).
// A case asserts on the class and the code; the driver keeps what it saw in `detail`.
import { randomUUID } from 'node:crypto';
import { SESSION_COOKIE } from '../../../src/doors/nemo-gym/app.js';
import { traceIdOf } from '../../../src/doors/nemo-gym/sessions.js';
import { postOnce, type Cookies } from '../../helpers/nemo-gym-client.js';
import { HttpStatusError, MaxRetriesError, OrsClient, OrsSession, SessionTerminatedError, SseError, ToolCallError } from '../../helpers/ors-client.js';
import { EnvClient, ServerError } from '../../helpers/openenv-client.js';
import { mcpPost, type RpcReply } from '../../helpers/openenv-mcp.js';
import { slimeRemoteRm } from '../../helpers/reward-clients.js';
import { callSandboxApi } from '../../helpers/verl-sandbox-fusion.js';

export type Reply =
  | { kind: 'output'; text: string; isError: boolean; detail: string }
  | { kind: 'reward'; reward: number; failureClass?: string | undefined; detail: string }
  | { kind: 'retry'; code: string | undefined; detail: string }
  | { kind: 'final'; code: string | undefined; detail: string }
  | { kind: 'transport'; detail: string };

/** Where a server's doors listen. */
export interface Endpoints {
  /** The main listener (Agent RFT, MCP, ORS, the record's routes). */
  main: string;
  key: string;
  nemoGym: string;
  /** The private listener (OpenEnv, reward, SandboxFusion). */
  private: string;
  /** The environment (tools, grader, rows) that ORS and OpenEnv episodes play. */
  environment: string;
  /** The tools a NeMo Gym row offers (Gym's rows carry their tools). */
  tools: string[];
}

export interface Episode {
  /** The rollout's id in the record, once known (the reward and SandboxFusion doors mint one per request). */
  traceId: string | undefined;
  call(tool: string, args: Record<string, unknown>, callId?: string): Promise<Reply>;
  submit(answer: string): Promise<Reply>;
  end(): Promise<void>;
}

/**
 * Which task of the environment an episode plays (default: the conformance environment's: index 0 of
 * train, an empty item, graded by /grade against reference_answer 42).
 */
export interface TaskAt {
  /** Its index in the train split (ORS and OpenEnv pick a task by it). */
  index: number;
  /** The row's fields as Agent RFT sends them with each call (the row without messages and tools). */
  item: Record<string, unknown>;
  /** The row as NeMo Gym's JSONL holds it (toGymRow). */
  gymRow: Record<string, unknown>;
  /** Agent RFT's grader path (e.g. /graders/harbor). */
  graderPath: string;
}

export interface Door {
  name: 'Agent RFT' | 'MCP' | 'NeMo Gym' | 'ORS' | 'OpenEnv' | 'OpenEnv /mcp' | 'reward' | 'SandboxFusion';
  open(e: Endpoints, at?: TaskAt): Promise<Episode>;
}

const codeIn = (text: string): string | undefined => /RFT_ERR_[A-Z0-9_]+/.exec(text)?.[0];
const failed = (e: unknown): Reply => ({ kind: 'transport', detail: String(e) });
const noSuchPath = (door: string, what: string) => (): Promise<Reply> => Promise.reject(new Error(`${door} has no ${what}`));

/** A status as Agent RFT's trainer reads it (agent-rft-wire.md: a 5xx is retried 3 times, then the rollout dropped). */
function byStatus(status: number, text: string): Reply {
  if (status >= 500) return { kind: 'retry', code: codeIn(text), detail: `${status} ${text}` };
  if (status >= 400) return { kind: 'final', code: codeIn(text), detail: `${status} ${text}` };
  return { kind: 'output', text, isError: false, detail: `${status} ${text}` };
}

async function post(url: string, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; text: string }> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  return { status: res.status, text: await res.text() };
}

const agentRft: Door = {
  name: 'Agent RFT',
  async open(e, at) {
    const traceId = `trace_${randomUUID()}`;
    const auth = { authorization: `Bearer ${e.key}` };
    return {
      traceId,
      async call(name, args, callId = `call_${randomUUID().slice(0, 8)}`) {
        try {
          const r = await post(`${e.main}/tools`, { type: 'function_call', call_id: callId, name, arguments: JSON.stringify(args), trace_id: traceId, item: at?.item ?? {} }, auth);
          if (r.status !== 200) return byStatus(r.status, r.text);
          return { kind: 'output', text: (JSON.parse(r.text) as { output: string }).output, isError: false, detail: r.text };
        } catch (err) {
          return failed(err);
        }
      },
      async submit(answer) {
        try {
          const r = await post(`${e.main}${at?.graderPath ?? '/grade'}`, { sample: { output_text: answer, output_tools: [], choices: [] }, item: at?.item ?? { reference_answer: '42' }, trace_id: traceId }, auth);
          if (r.status !== 200) return byStatus(r.status, r.text);
          return { kind: 'reward', reward: (JSON.parse(r.text) as { score: number }).score, detail: r.text };
        } catch (err) {
          return failed(err);
        }
      },
      end: () => Promise.resolve(),
    };
  },
};

const MCP_META = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientInfo': { name: 'conformance', version: '1' }, 'io.modelcontextprotocol/clientCapabilities': {} };

const mcp: Door = {
  name: 'MCP',
  async open(e) {
    const traceId = `trace_${randomUUID()}`;
    return {
      traceId,
      async call(name, args, callId = `call_${randomUUID().slice(0, 8)}`) {
        let r: { status: number; text: string };
        try {
          r = await post(
            `${e.main}/mcp`,
            { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args, _meta: { ...MCP_META, 'rft-endpoints/idempotency-key': callId } } },
            { authorization: `Bearer ${e.key}`, accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': name, 'x-rft-trace-id': traceId },
          );
        } catch (err) {
          return failed(err);
        }
        const json = r.text.includes('{') ? r.text.slice(r.text.indexOf('{'), r.text.lastIndexOf('}') + 1) : '';
        if (!json) return { kind: r.status >= 500 ? 'retry' : 'final', code: undefined, detail: `${r.status} ${r.text}` };
        const body = JSON.parse(json) as { result?: { isError?: boolean; content?: { text?: string }[] }; error?: { code: number; data?: { code?: string; retryable?: boolean } } };
        if (body.error) return { kind: body.error.data?.retryable === true ? 'retry' : 'final', code: body.error.data?.code, detail: json };
        return { kind: 'output', text: (body.result?.content ?? []).map((c) => c.text ?? '').join(''), isError: body.result?.isError === true, detail: json };
      },
      submit: noSuchPath('MCP', 'grade'),
      end: () => Promise.resolve(),
    };
  },
};

const nemoGym: Door = {
  name: 'NeMo Gym',
  async open(e, at) {
    const row = at?.gymRow ?? {
      responses_create_params: { input: [{ role: 'user', content: 'q' }], tools: e.tools.map((name) => ({ type: 'function', name, parameters: {}, strict: true })) },
      reference_answer: '42',
      agent_ref: { name: 'rft_agent' },
      _ng_task_index: 0,
      _ng_rollout_index: 0,
    };
    const seed = await postOnce(e.nemoGym, '/seed_session', row);
    if (seed.status !== 200) throw new Error(`seed_session: ${seed.status} ${seed.text}`);
    // simple_agent: each reply's Set-Cookie replaces the cookies (the door sets the same token on every reply).
    let cookies: Cookies = seed.cookies;
    const output: Record<string, unknown>[] = [];
    return {
      traceId: traceIdOf(seed.cookies[SESSION_COOKIE]!),
      async call(name, args, callId = `call_${randomUUID().slice(0, 8)}`) {
        output.push({ type: 'function_call', call_id: callId, name, arguments: JSON.stringify(args), id: `fc_${callId}`, status: 'completed' });
        let r;
        try {
          r = await postOnce(e.nemoGym, `/${name}`, args, { cookies });
        } catch (err) {
          return failed(err);
        }
        if (Object.keys(r.cookies).length) cookies = r.cookies;
        output.push({ type: 'function_call_output', call_id: callId, output: r.text });
        // Tool routes: simple_agent shows the body whatever the status; a 5xx of ours is the door's
        // mark that /verify will answer 503 (the rollout is rerun).
        if (r.status >= 500) return { kind: 'retry', code: codeIn(r.text), detail: `${r.status} ${r.text}` };
        return { kind: 'output', text: r.text, isError: r.status >= 400, detail: `${r.status} ${r.text}` };
      },
      async submit(answer) {
        output.push({ type: 'message', role: 'assistant', id: 'msg_1', status: 'completed', content: [{ type: 'output_text', text: answer, annotations: [] }] });
        const response = { id: 'resp_1', created_at: 0, model: 'policy', object: 'response', output, parallel_tool_calls: false, tool_choice: 'auto', tools: [] };
        let r;
        try {
          r = await postOnce(e.nemoGym, '/verify', { ...row, response }, { cookies });
        } catch (err) {
          return failed(err);
        }
        // Non-2xx on /verify makes /run a 500: NeMo RL reruns the rollout.
        if (r.status >= 500) return { kind: 'retry', code: codeIn(r.text), detail: `${r.status} ${r.text}` };
        if (r.status !== 200) return { kind: 'final', code: codeIn(r.text), detail: `${r.status} ${r.text}` };
        const body = JSON.parse(r.text) as { reward: number; _ng_failure_class?: string };
        return { kind: 'reward', reward: body.reward, failureClass: body._ng_failure_class, detail: r.text };
      },
      end: () => Promise.resolve(),
    };
  },
};

/** The ORS SDK's reading: 5xx, 429 and broken streams are reconnected (5 in a row end it: MaxRetriesError), other 4xx and `error` events are final. */
function orsFailure(err: unknown): Reply {
  if (err instanceof MaxRetriesError) return { kind: 'retry', code: codeIn(err.message), detail: err.message };
  // A session its pings found gone (a ping failed its 3 tries while the server was down) ends the session's calls
  // too, the one running included (_run_or_die): the same end as the reconnects running out, whichever comes first.
  if (err instanceof SessionTerminatedError) return { kind: 'retry', code: codeIn(err.message), detail: err.message };
  if (err instanceof ToolCallError) return { kind: 'output', text: err.message, isError: true, detail: err.message };
  if (err instanceof HttpStatusError || err instanceof SseError) return { kind: 'final', code: codeIn(err.message), detail: err.message };
  return failed(err);
}

const ors: Door = {
  name: 'ORS',
  async open(e, at) {
    const client = new OrsClient(e.main, { token: e.key, waitScale: 0.01 });
    let pending: string | undefined;
    const res = (await client.sse('/create_session', {}, { maxRetries: 3, onEvent: (ev, d) => (ev === 'task_id' ? (pending = d.trim()) : undefined) })) as { sid?: string } | null;
    const sid = res?.sid ?? pending!;
    await client.request('POST', '/create', { split: 'train', index: at?.index ?? 0 }, sid);
    const s = new OrsSession(client, e.environment, sid);
    const text = (blocks: { text?: string }[]) => blocks.map((b) => b.text ?? '').join('\n');
    return {
      traceId: sid,
      async call(name, args) {
        try {
          const out = await s.callTool(name, args);
          return { kind: 'output', text: text(out.blocks), isError: false, detail: JSON.stringify(out) };
        } catch (err) {
          return orsFailure(err);
        }
      },
      async submit(answer) {
        try {
          const out = await s.callTool('submit', { answer });
          if (out.reward === null) return { kind: 'output', text: text(out.blocks), isError: false, detail: JSON.stringify(out) };
          return { kind: 'reward', reward: out.reward, detail: JSON.stringify(out) };
        } catch (err) {
          return orsFailure(err);
        }
      },
      async end() {
        s.stopPings();
        await client.request('POST', '/delete', undefined, sid).catch(() => undefined);
        await client.request('POST', '/delete_session', undefined, sid).catch(() => undefined);
      },
    };
  },
};

/** OpenEnv's client raises an `error` frame; `retryable` tells ours from the client's mistakes. */
function openEnvFailure(err: unknown): Reply {
  if (err instanceof ServerError) return { kind: err.data.retryable === true ? 'retry' : 'final', code: err.data.code, detail: JSON.stringify(err.data) };
  return failed(err);
}

const openEnv: Door = {
  name: 'OpenEnv',
  async open(e, at) {
    const env = await new EnvClient(`${e.private}/${e.environment}`, 30_000).connect();
    await env.reset({ split: 'train', index: at?.index ?? 0 });
    const state = await env.state();
    return {
      traceId: state.trace_id as string,
      async call(name, args) {
        try {
          const r = await env.step({ type: 'call_tool', tool_name: name, arguments: args });
          const error = r.observation.error as { message: string } | null | undefined;
          const result = r.observation.result as { data?: unknown } | null | undefined;
          return { kind: 'output', text: error ? error.message : String(result?.data ?? ''), isError: Boolean(error), detail: JSON.stringify(r) };
        } catch (err) {
          return openEnvFailure(err);
        }
      },
      async submit(answer) {
        try {
          const r = await env.step({ type: 'call_tool', tool_name: 'submit', arguments: { answer } });
          if (r.reward === null) return { kind: 'output', text: JSON.stringify(r.observation), isError: true, detail: JSON.stringify(r) };
          return { kind: 'reward', reward: r.reward, detail: JSON.stringify(r) };
        } catch (err) {
          return openEnvFailure(err);
        }
      },
      end: () => env.close().catch(() => undefined),
    };
  },
};

/**
 * OpenEnv's MCPToolClient in production mode raises on a non-2xx (raise_for_status) and on a JSON-RPC
 * `error` (RuntimeError): `data.retryable` tells ours from the client's mistakes; a tool result is the model's.
 */
function openEnvMcpReply(r: RpcReply): Reply {
  const detail = JSON.stringify(r);
  if (r.error) return { kind: r.error.data?.retryable === true ? 'retry' : 'final', code: r.error.data?.code, detail };
  const result = r.result as { data?: unknown; is_error?: boolean; structured_content?: { reward?: unknown } | null };
  if (typeof result.structured_content?.reward === 'number' && result.is_error !== true) return { kind: 'reward', reward: result.structured_content.reward, detail };
  return { kind: 'output', text: String(result.data ?? ''), isError: result.is_error === true, detail };
}

const openEnvMcp: Door = {
  name: 'OpenEnv /mcp',
  async open(e, at) {
    const url = `${e.private}/${e.environment}/mcp`;
    let id = 0;
    const created = await mcpPost(url, 'openenv/session/create', { split: 'train', index: at?.index ?? 0 }, ++id);
    const sid = created.result?.session_id;
    if (typeof sid !== 'string') throw new Error(`openenv/session/create: ${JSON.stringify(created)}`);
    // A call id is the request's JSON-RPC id: the session's exactly-once key, as the client's counter is.
    const call = (name: string, args: Record<string, unknown>, callId?: string): Promise<Reply> =>
      mcpPost(url, 'tools/call', { name, arguments: args, session_id: sid }, callId ?? ++id).then(openEnvMcpReply, failed);
    return {
      traceId: sid,
      call,
      submit: (answer) => call('submit', { answer }),
      end: () => mcpPost(url, 'openenv/session/close', { session_id: sid }, ++id).then(() => undefined, () => undefined),
    };
  },
};

const reward: Door = {
  name: 'reward',
  open(e) {
    return Promise.resolve({
      traceId: undefined,
      call: noSuchPath('the reward door', 'tool call'),
      async submit(answer) {
        // slime's remote_rm: every failure retried (10 tries), then raised: the rollout fails loudly.
        const run = await slimeRemoteRm(`${e.private}/reward`, { prompt: 'q', response: answer, label: '42' });
        if (run.result !== undefined) return { kind: 'reward', reward: run.result as number, detail: JSON.stringify(run) };
        if (run.statuses.every((s) => s >= 500)) return { kind: 'retry', code: undefined, detail: JSON.stringify(run) };
        if (run.statuses.every((s) => s === 0)) return failed(run.raised);
        return { kind: 'final', code: undefined, detail: JSON.stringify(run) };
      },
      end: () => Promise.resolve(),
    });
  },
};

const sandboxFusion: Door = {
  name: 'SandboxFusion',
  open(e) {
    return Promise.resolve({
      traceId: undefined,
      async call(_name, args) {
        // verl's call_sandbox_api: a 504 alone is retried (3 tries); the waits between them are skipped here.
        let r;
        try {
          r = await callSandboxApi(`${e.private}/run_code`, String(args.code), null, 30, 1024, 'python', () => Promise.resolve());
        } catch (err) {
          return failed(err);
        }
        if (r.statuses.every((s) => s === 504)) return { kind: 'retry', code: undefined, detail: JSON.stringify(r) };
        if (!r.response) return { kind: 'final', code: undefined, detail: JSON.stringify(r) };
        // SandboxError or a Failed run is a failed test case to verl: a 0 the model is scored on.
        const status = r.response.status as string;
        return { kind: 'output', text: JSON.stringify(r.response), isError: status !== 'Success', detail: `${r.statuses.join(',')} ${JSON.stringify(r.response)}` };
      },
      submit: noSuchPath('SandboxFusion', 'grade'),
      end: () => Promise.resolve(),
    });
  },
};

export const DOORS: readonly Door[] = [agentRft, mcp, nemoGym, ors, openEnv, openEnvMcp, reward, sandboxFusion];
