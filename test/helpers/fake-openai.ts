// A small OpenAI-compatible server for tests (there is no internet here): node:http on
// 127.0.0.1, random port. The real openai SDK talks to it, so retries, timeouts and structured
// output parsing are exercised for real; only the model is scripted.
//
// /v1/chat/completions: the reply is chosen by `chat` (if given), else by a marker in the
// messages: [[fake:refusal]], [[fake:malformed]], [[fake:prose]], [[fake:delay=MS]],
// [[fake:status=CODE]], [[fake:score=X]], [[fake:label=L]]. Without a marker: a good structured
// answer (result 1 for a score schema, the first enum label for a label schema).
// /v1/embeddings: a deterministic hashed bag of words (lowercased [a-z0-9]+ tokens, FNV-1a into
// `dims` non-negative buckets), so similar texts get similar vectors and equal texts equal ones.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export type FakeChatReply =
  | { kind: 'json'; value: unknown }
  | { kind: 'text'; text: string }
  | { kind: 'refusal'; text: string }
  | { kind: 'status'; status: number; message?: string }
  | { kind: 'delay'; ms: number; then: FakeChatReply };

export interface ChatRequestBody {
  model: string;
  messages: Array<{ role: string; content: unknown }>;
  response_format?: { type: string; json_schema?: { name?: string; schema?: Record<string, unknown> } };
  [key: string]: unknown;
}

export interface FakeOpenAI {
  url: string;
  /** baseURL for the openai SDK (url + "/v1"). */
  baseURL: string;
  apiKey: string;
  /** Every request body received, in order, with its path. */
  requests: Array<{ path: string; body: Record<string, unknown>; authorization: string | undefined }>;
  close(): Promise<void>;
}

export interface FakeOpenAIOptions {
  chat?: (body: ChatRequestBody, callIndex: number) => FakeChatReply;
  dims?: number;
}

function messagesText(body: ChatRequestBody): string {
  return body.messages
    .map((m) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content)))
    .join('\n');
}

/** The default script: markers in the prompt pick the reply. */
export function markerReply(body: ChatRequestBody): FakeChatReply {
  const text = messagesText(body);
  const marker = (name: string) => new RegExp(`\\[\\[fake:${name}(?:=([^\\]]*))?\\]\\]`).exec(text);
  const delay = marker('delay');
  const rest = (): FakeChatReply => {
    if (marker('refusal')) return { kind: 'refusal', text: 'I cannot help with that.' };
    if (marker('malformed')) return { kind: 'text', text: '{"result": 0.5, "steps": [' };
    if (marker('prose')) return { kind: 'text', text: 'I would give this a 7 out of 10.' };
    const status = marker('status');
    if (status) return { kind: 'status', status: Number(status[1]), message: 'scripted failure' };
    const schema = body.response_format?.json_schema?.schema as
      | { properties?: { result?: { type?: string; enum?: string[] } } }
      | undefined;
    const result = schema?.properties?.result;
    const label = marker('label');
    if (result?.enum || label) return { kind: 'json', value: { result: label?.[1] ?? result?.enum?.[0] } };
    const score = marker('score');
    return {
      kind: 'json',
      value: { steps: [{ description: 'compared the answer', conclusion: 'scripted verdict' }], result: score ? Number(score[1]) : 1 },
    };
  };
  return delay ? { kind: 'delay', ms: Number(delay[1]), then: rest() } : rest();
}

/** FNV-1a, 32-bit. */
function fnv1a(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

export function hashedEmbedding(text: string, dims = 64): number[] {
  const v = new Array<number>(dims).fill(0);
  for (const tok of text.toLowerCase().match(/[a-z0-9]+/g) ?? []) v[fnv1a(tok) % dims] = (v[fnv1a(tok) % dims] ?? 0) + 1;
  const norm = Math.sqrt(v.reduce((a, x) => a + x * x, 0));
  return norm === 0 ? v : v.map((x) => x / norm);
}

function send(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function completion(body: ChatRequestBody, content: string | null, refusal: string | null) {
  return {
    id: 'chatcmpl-fake',
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: body.model,
    choices: [{ index: 0, message: { role: 'assistant', content, refusal }, finish_reason: 'stop', logprobs: null }],
    usage: { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18, prompt_tokens_details: { cached_tokens: 0 } },
  };
}

async function readJson(req: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as Record<string, unknown>;
}

export async function startFakeOpenAI(opts: FakeOpenAIOptions = {}): Promise<FakeOpenAI> {
  const apiKey = 'sk-fake-' + Math.random().toString(36).slice(2);
  const requests: FakeOpenAI['requests'] = [];
  const timers = new Set<NodeJS.Timeout>();
  let chatCalls = 0;
  const dims = opts.dims ?? 64;

  const reply = (res: ServerResponse, body: ChatRequestBody, r: FakeChatReply): void => {
    switch (r.kind) {
      case 'json':
        return send(res, 200, completion(body, JSON.stringify(r.value), null));
      case 'text':
        return send(res, 200, completion(body, r.text, null));
      case 'refusal':
        return send(res, 200, completion(body, null, r.text));
      case 'status':
        return send(res, r.status, { error: { message: r.message ?? 'error', type: 'fake', code: null } });
      case 'delay': {
        const t = setTimeout(() => {
          timers.delete(t);
          if (!res.destroyed) reply(res, body, r.then);
        }, r.ms);
        timers.add(t);
        res.on('close', () => {
          clearTimeout(t);
          timers.delete(t);
        });
      }
    }
  };

  const server = createServer((req, res) => {
    void (async () => {
      const path = (req.url ?? '').split('?')[0] ?? '';
      let body: Record<string, unknown>;
      try {
        body = await readJson(req);
      } catch {
        return send(res, 400, { error: { message: 'invalid JSON' } });
      }
      requests.push({ path, body, authorization: req.headers.authorization });
      if (req.headers.authorization !== `Bearer ${apiKey}`) return send(res, 401, { error: { message: 'bad key' } });
      if (req.method === 'POST' && path === '/v1/chat/completions') {
        const chat = body as unknown as ChatRequestBody;
        const r = opts.chat ? opts.chat(chat, chatCalls++) : markerReply(chat);
        return reply(res, chat, r);
      }
      if (req.method === 'POST' && path === '/v1/embeddings') {
        const inputs = Array.isArray(body.input) ? (body.input as string[]) : [String(body.input)];
        const base64 = body.encoding_format === 'base64';
        const data = inputs.map((text, index) => {
          const v = hashedEmbedding(text, dims);
          // The SDK asks for base64 (little-endian float32) unless told otherwise.
          const embedding = base64 ? Buffer.from(new Float32Array(v).buffer).toString('base64') : v;
          return { object: 'embedding', index, embedding };
        });
        const tokens = inputs.reduce((a, t) => a + (t.match(/\S+/g)?.length ?? 0), 0);
        return send(res, 200, { object: 'list', data, model: body.model, usage: { prompt_tokens: tokens, total_tokens: tokens } });
      }
      send(res, 404, { error: { message: `no route ${req.method} ${path}` } });
    })();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const url = `http://127.0.0.1:${port}`;
  return {
    url,
    baseURL: `${url}/v1`,
    apiKey,
    requests,
    close: async () => {
      for (const t of timers) clearTimeout(t);
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
