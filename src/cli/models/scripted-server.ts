// A scripted OpenAI-compatible model on 127.0.0.1 (random port): it speaks the Responses API
// (function_call items; multi-turn by resent input or previous_response_id) and Chat Completions
// (tool_calls), and answers each turn from a script instead of a model. `rollout --model scripted:FILE`
// and `replay:EXPORT` run on it (scripted-file.ts, replay-script.ts), as do the tests and benches.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ScriptedCall {
  name: string;
  /** An object is JSON-encoded; a string is sent as is (to script malformed arguments). */
  arguments: unknown;
}

export interface ScriptedTurn {
  /** Tool calls of this turn; several make a parallel turn. None (or empty) ends the rollout. */
  calls?: ScriptedCall[];
  text?: string;
}

export interface TurnContext {
  api: 'responses' | 'chat';
  /** 0 for the first model turn of a rollout, +1 after each batch of tool outputs. */
  turn: number;
  /** Text of the last user message. */
  userText: string;
  /** Outputs fed back for the previous turn's calls, in order. */
  toolOutputs: string[];
  /** Names of the tools offered in this request. */
  tools: string[];
  model: string;
  /**
   * The conversation's system, developer and user messages, in order: all a model knows of the
   * dataset row (its own turns only add assistant messages and tool outputs).
   */
  prompt: PromptMessage[];
  /**
   * The same id on every turn of one conversation: new on turn 0, then read back from the ids of
   * the calls this server made in it (so two rollouts of one row never mix, whatever the API).
   */
  conversation: string;
}

export interface PromptMessage {
  role: string;
  text: string;
}

export type Script = ScriptedTurn[] | ((ctx: TurnContext) => ScriptedTurn);

export interface ScriptedModelOptions {
  script: Script;
  /** false answers 404 on /v1/responses, like a server with Chat Completions only. Default true. */
  responsesApi?: boolean;
  /** Delay before each answer; 0 (the default) answers instantly. */
  latencyMs?: number;
  /**
   * Answer every Responses request with one message whose text is `bytes` long, streamed in 64 KiB
   * chunks as the client reads them: chunked, or with its Content-Length declared up front.
   */
  flood?: { bytes: number; declareLength?: boolean };
}

/** One flooded reply: how much of it the client took before the connection closed. */
export interface FloodRecord {
  sent: number;
  /** The whole body was written; false when the client closed the connection first. */
  finished: boolean;
}

export interface RecordedRequest {
  api: 'responses' | 'chat';
  body: Record<string, unknown>;
  /** The Authorization header, to check which API key the client sent. */
  authorization: string | undefined;
}

export interface ScriptedModel {
  /** Base URL including /v1, for the SDK's baseURL or --base-url. */
  baseURL: string;
  requests: RecordedRequest[];
  /** Each flooded reply, once it has ended (see ScriptedModelOptions.flood). */
  floods: FloodRecord[];
  close(): Promise<void>;
}

type Item = Record<string, unknown>;

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((p: Item) => (typeof p?.text === 'string' ? p.text : '')).join('');
  return '';
}

/** Turn number and fed-back outputs: runs of tool results after the last user message. */
function conversationState(entries: Item[], isUser: (e: Item) => boolean, isOutput: (e: Item) => boolean, outputText: (e: Item) => string) {
  let lastUser = -1;
  entries.forEach((e, i) => {
    if (isUser(e)) lastUser = i;
  });
  let turn = 0;
  let toolOutputs: string[] = [];
  let inRun = false;
  for (const e of entries.slice(lastUser + 1)) {
    if (isOutput(e)) {
      if (!inRun) {
        turn++;
        toolOutputs = [];
      }
      inRun = true;
      toolOutputs.push(outputText(e));
    } else {
      inRun = false;
    }
  }
  const userText = lastUser >= 0 ? textOf(entries[lastUser]!.content) : '';
  return { turn, toolOutputs, userText };
}

const PROMPT_ROLES = new Set(['system', 'developer', 'user']);

/** The prompt of a conversation: its system, developer and user messages (chat messages or Responses input items). */
export function promptOf(entries: readonly Item[]): PromptMessage[] {
  return entries
    .filter((e) => typeof e.role === 'string' && PROMPT_ROLES.has(e.role) && (e.type === undefined || e.type === 'message'))
    .map((e) => ({ role: String(e.role), text: textOf(e.content) }));
}

// Call ids carry their conversation: call_<conversation>_<n>, both parts base 36. The separator is
// outside base 36's alphabet, so no conversation id can run into the call's number.
const CALL_ID = /^call_(cv[0-9a-z]+)_/;

function conversationOf(callIds: readonly unknown[]): string | undefined {
  for (const id of callIds) {
    const m = typeof id === 'string' ? CALL_ID.exec(id) : null;
    if (m) return m[1];
  }
  return undefined;
}

// Usage as the Responses API reports it, token details included: NeMo Gym's model server refuses a reply
// without them (NeMoGymResponseUsage), which would stop an ng_collect_rollouts rehearsal at its first turn.
// cache_write_tokens is in the newer openai SDKs' InputTokensDetails (required there, unknown to older ones).
const RESPONSES_USAGE = {
  input_tokens: 1,
  input_tokens_details: { cached_tokens: 0, cache_write_tokens: 0 },
  output_tokens: 1,
  output_tokens_details: { reasoning_tokens: 0 },
  total_tokens: 2,
};

function encodeArgs(a: unknown): string {
  return typeof a === 'string' ? a : JSON.stringify(a ?? {});
}

export async function startScriptedModel(opts: ScriptedModelOptions): Promise<ScriptedModel> {
  const requests: RecordedRequest[] = [];
  const stored = new Map<string, Item[]>(); // response id -> the whole conversation after it
  let seq = 0;
  const nextId = (prefix: string) => `${prefix}_${(++seq).toString(36).padStart(6, '0')}`;
  const callId = (conversation: string) => `call_${conversation}_${(++seq).toString(36)}`;
  const conversationIn = (callIds: readonly unknown[]) => conversationOf(callIds) ?? `cv${(++seq).toString(36)}`;

  const scripted = (ctx: TurnContext): ScriptedTurn => {
    if (typeof opts.script === 'function') return opts.script(ctx);
    return opts.script[ctx.turn] ?? { text: 'done' };
  };

  const responses = (body: Item): Item => {
    const raw = body.input;
    const input: Item[] = typeof raw === 'string' ? [{ role: 'user', content: raw }] : Array.isArray(raw) ? (raw as Item[]) : [];
    const prev = typeof body.previous_response_id === 'string' ? (stored.get(body.previous_response_id) ?? []) : [];
    const all = [...prev, ...input];
    const st = conversationState(
      all,
      (e) => e.role === 'user',
      (e) => e.type === 'function_call_output',
      (e) => (typeof e.output === 'string' ? e.output : JSON.stringify(e.output)),
    );
    const tools = Array.isArray(body.tools) ? (body.tools as Item[]).map((t) => String(t.name)) : [];
    const conversation = conversationIn(all.filter((e) => e.type === 'function_call').map((e) => e.call_id));
    const turn = scripted({ api: 'responses', ...st, tools, model: String(body.model), prompt: promptOf(all), conversation });
    const output: Item[] = (turn.calls ?? []).map((c) => ({
      type: 'function_call',
      id: nextId('fc'),
      call_id: callId(conversation),
      name: c.name,
      arguments: encodeArgs(c.arguments),
      status: 'completed',
    }));
    if (turn.text !== undefined || output.length === 0) {
      output.push({
        type: 'message',
        id: nextId('msg'),
        role: 'assistant',
        status: 'completed',
        content: [{ type: 'output_text', text: turn.text ?? '', annotations: [] }],
      });
    }
    const id = nextId('resp');
    stored.set(id, [...all, ...output]);
    // Every field the Responses API's Response requires (NeMo Gym validates them: test/fixtures/gym),
    // the request's settings echoed with the API's defaults.
    return {
      id,
      object: 'response',
      created_at: Math.floor(Date.now() / 1000),
      status: 'completed',
      model: body.model ?? 'scripted',
      output,
      parallel_tool_calls: body.parallel_tool_calls ?? true,
      tool_choice: body.tool_choice ?? 'auto',
      tools: body.tools ?? [],
      usage: RESPONSES_USAGE,
    };
  };

  const chat = (body: Item): Item => {
    const messages = Array.isArray(body.messages) ? (body.messages as Item[]) : [];
    const st = conversationState(
      messages,
      (m) => m.role === 'user',
      (m) => m.role === 'tool',
      (m) => textOf(m.content),
    );
    const tools = Array.isArray(body.tools) ? (body.tools as { function?: { name?: string } }[]).map((t) => String(t.function?.name)) : [];
    const sentIds = messages.flatMap((m) => (Array.isArray(m.tool_calls) ? (m.tool_calls as Item[]).map((c) => c.id) : []));
    const conversation = conversationIn(sentIds);
    const turn = scripted({ api: 'chat', ...st, tools, model: String(body.model), prompt: promptOf(messages), conversation });
    const calls = (turn.calls ?? []).map((c) => ({ id: callId(conversation), type: 'function', function: { name: c.name, arguments: encodeArgs(c.arguments) } }));
    return {
      id: nextId('chatcmpl'),
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model: body.model,
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: turn.text ?? (calls.length > 0 ? null : ''), ...(calls.length > 0 ? { tool_calls: calls } : {}) },
          finish_reason: calls.length > 0 ? 'tool_calls' : 'stop',
        },
      ],
      usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
    };
  };

  const send = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };

  const floods: FloodRecord[] = [];
  const flood = async (res: ServerResponse, { bytes, declareLength }: { bytes: number; declareLength?: boolean }) => {
    const head = Buffer.from(
      '{"id":"resp_flood","object":"response","created_at":0,"status":"completed","model":"scripted",' +
        '"parallel_tool_calls":true,"tool_choice":"auto","tools":[],"output":' +
        '[{"type":"message","id":"msg_flood","role":"assistant","status":"completed","content":[{"type":"output_text","annotations":[],"text":"',
    );
    const tail = Buffer.from(`"}]}],"usage":${JSON.stringify(RESPONSES_USAGE)}}`);
    res.writeHead(200, { 'content-type': 'application/json', ...(declareLength ? { 'content-length': head.length + bytes + tail.length } : {}) });
    const record: FloodRecord = { sent: 0, finished: false };
    let closed = false;
    const onClose = new Promise<void>((resolve) => res.on('close', () => resolve(void (closed = true))));
    const chunk = Buffer.alloc(64 * 1024, 'A');
    res.write(head);
    while (record.sent < bytes && !closed) {
      const part = bytes - record.sent >= chunk.length ? chunk : chunk.subarray(0, bytes - record.sent);
      record.sent += part.length;
      // Only as fast as the client reads: a full socket waits for drain (or for the client to go).
      if (!res.write(part)) await Promise.race([new Promise((r) => res.once('drain', r)), onClose]);
    }
    if (!closed) {
      res.end(tail);
      record.finished = true;
    }
    floods.push(record);
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const path = (req.url ?? '').split('?')[0];
    const api = path === '/v1/responses' ? 'responses' : path === '/v1/chat/completions' ? 'chat' : null;
    if (req.method !== 'POST' || api === null || (api === 'responses' && opts.responsesApi === false)) {
      send(res, 404, { error: { message: `no route ${req.method} ${path}`, type: 'invalid_request_error', code: 'not_found' } });
      return;
    }
    let body: Item;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Item;
    } catch {
      send(res, 400, { error: { message: 'body is not JSON', type: 'invalid_request_error' } });
      return;
    }
    requests.push({ api, body, authorization: req.headers.authorization });
    if (opts.latencyMs) await new Promise((r) => setTimeout(r, opts.latencyMs));
    if (opts.flood && api === 'responses') return flood(res, opts.flood);
    try {
      send(res, 200, api === 'responses' ? responses(body) : chat(body));
    } catch (e) {
      send(res, 500, { error: { message: (e as Error).message, type: 'server_error' } });
    }
  };

  const server = createServer((req, res) => void handle(req, res));
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseURL: `http://127.0.0.1:${port}/v1`,
    requests,
    floods,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
