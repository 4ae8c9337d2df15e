// In-process fuzzing of every route (fast-check arbitraries, Fastify's app.inject): well-formed
// requests with fuzzed fields, wrong types, deep nesting, huge strings, odd unicode, duplicate keys,
// `__proto__`, bad credentials and content types. What must hold: no 5xx except the few that say
// "could not record" or "could not grade", no crash, no hang, a flat heap. Used by bench/fuzz.ts
// (100,000 requests and more) and test/routes/fuzz.test.ts (a smaller count in CI).
import fc from 'fast-check';
import type { FastifyInstance } from 'fastify';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { join } from 'node:path';
import { startTestServer, repoRoot } from '../../test/helpers/server.js';
import { startFakeOpenAI } from '../../test/helpers/fake-openai.js';

/**
 * The 5xx a request may get, by route: a record that could not be written (the trainer's retry is
 * right); from the tool route, a sandbox tool on this server, which runs without sandboxes (an
 * infrastructure failure: uncharged, retried, never shown to the model); and, from a grader route,
 * a grader that could not score the row it was given, or a row that does not match the grader's
 * itemSchema (the trainer must drop that rollout rather than train on a made-up score).
 */
const ALLOWED_5XX: Record<string, RegExp> = {
  any: /^RFT_ERR_STORE$/,
  tools: /^RFT_ERR_SANDBOX_UNAVAILABLE$/,
  grade: /^RFT_ERR_(GRADER_FAILED|GRADER_BAD_SCORE|BAD_ROW)$/,
};

export interface FuzzRequest {
  method: 'GET' | 'POST' | 'DELETE';
  url: string;
  /** A loopback address of its own, so the per-address limit on failed authentications is not what answers. */
  remoteAddress: string;
  /** Route family, for ALLOWED_5XX and the report. */
  route: string;
  headers: Record<string, string>;
  payload?: string;
}

export interface FuzzFailure {
  request: FuzzRequest;
  status: number;
  code: string | undefined;
  why: 'status' | 'hang';
}

export interface FuzzResult {
  requests: number;
  byStatus: Record<string, number>;
  /** Every 5xx by code and route family, allowed or not. */
  byCode5xx: Record<string, number>;
  failures: FuzzFailure[];
  /** Heap used after a full GC (MB) at each tenth of the run. */
  heapMb: number[];
  /** Milliseconds spent per route family (sum), for where the time goes. */
  msByRoute: Record<string, number>;
  /** The slowest requests: milliseconds and what they were. */
  slowest: { ms: number; request: string }[];
  /** Uncaught exceptions and unhandled rejections seen during the run. */
  crashes: string[];
  seconds: number;
}

// ---- values --------------------------------------------------------------------------------------

const oddStrings = fc.constantFrom(
  '', ' ', '\u0000', '\ud800', '\udfff', '\uffff', '\ufeff', '\u202e', '\u200b', 'ｔｒａｃｅ', '🦀🧪', 'e\u0301',
  '../../etc/passwd', '%00', '%2e%2e%2f', '<script>', "'; DROP TABLE calls; --", '__proto__', 'constructor', 'prototype',
  'trace_00000000-0000-0000-0000-000000000000', 'null', 'undefined', 'NaN', '-1', '1e309', '0x10',
);
// Mostly under the 1 MB body limit, sometimes over it.
const bigString = fc.oneof({ weight: 9, arbitrary: fc.integer({ min: 1_000, max: 200_000 }) }, { weight: 1, arbitrary: fc.integer({ min: 1_000_000, max: 1_100_000 }) }).map((n) => 'A'.repeat(n));
const text: fc.Arbitrary<string> = fc.oneof({ weight: 4, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) }, { weight: 3, arbitrary: oddStrings });
const key = fc.oneof(fc.string({ unit: 'binary', maxLength: 12 }), fc.constantFrom('__proto__', 'constructor', 'prototype', 'toString', 'item', 'sample'));

/** Any JSON value, strings odd and keys hostile. */
const json: fc.Arbitrary<unknown> = fc.letrec<{ v: unknown }>((tie) => ({
  v: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    text,
    fc.double(),
    fc.integer(),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('v'), { maxLength: 5 }),
    fc.dictionary(key, tie('v'), { maxKeys: 5 }),
  ),
})).v;

/**
 * A value nested up to 20,000 levels deep (arrays or objects): a marker string here, spliced into
 * the body's text by toBody (JSON.stringify itself would overflow the stack).
 */
const deep = fc.tuple(fc.integer({ min: 20, max: 20_000 }), fc.constantFrom('a', 'o')).map(([depth, kind]) => `@@deep-${depth}-${kind}@@`);
const DEEP = /"@@deep-(\d+)-([ao])@@"/g;

function toBody(v: unknown): string {
  return (JSON.stringify(v) ?? 'null').replace(DEEP, (_m, d: string, kind: string) => {
    const n = Number(d);
    return kind === 'a' ? `${'['.repeat(n)}"bottom"${']'.repeat(n)}` : `${'{"a":'.repeat(n)}"bottom"${'}'.repeat(n)}`;
  });
}

/** Mostly the right type, sometimes anything: another JSON value, a deep one, a huge string, none. */
const maybe = <T>(good: fc.Arbitrary<T>): fc.Arbitrary<unknown> =>
  fc.oneof(
    { weight: 20, arbitrary: good as fc.Arbitrary<unknown> },
    { weight: 6, arbitrary: json },
    { weight: 2, arbitrary: deep },
    { weight: 1, arbitrary: bigString },
    { weight: 3, arbitrary: fc.constant(undefined) },
  );

// A few rollouts and call ids that recur, so replays, conflicts and grades of known rollouts happen.
const traceId = fc.oneof({ weight: 3, arbitrary: fc.constantFrom('trace_f1', 'trace_f2', 'trace_f3', 'trace_f4') }, { weight: 1, arbitrary: fc.uuid().map((u) => `trace_${u}`) }, { weight: 1, arbitrary: text });
const callId = fc.oneof({ weight: 3, arbitrary: fc.constantFrom('call_1', 'call_2', 'call_3') }, { weight: 2, arbitrary: fc.uuid().map((u) => `call_${u}`) }, { weight: 1, arbitrary: text });

const toolNames = ['search_docs', 'read_doc', 'list_docs', 'search', 'read_file', 'list_files', 'shell', 'write_file', 'apply_patch'];
const graderNames = ['answer_match', 'answer_contains', 'unit_tests'];

const toolArgs = fc.oneof(
  fc.record({ query: text, top_k: maybe(fc.integer({ min: -5, max: 20 })) }, { requiredKeys: [] }),
  fc.record({ doc_id: text, path: text, command: text, content: text, patch: text }, { requiredKeys: [] }),
  json,
);
const item = fc.oneof(
  fc.record({ reference_answer: maybe(text), tool_budget: maybe(fc.integer({ min: -3, max: 30 })), answer_type: maybe(fc.constantFrom('number', 'text')), messages: maybe(json) }, { requiredKeys: [] }),
  json,
  deep,
);
const functionCall = fc.record(
  {
    type: maybe(fc.constant('function_call')),
    id: maybe(text),
    call_id: maybe(callId),
    name: maybe(fc.constantFrom(...toolNames, 'nope')),
    arguments: fc.oneof(toolArgs.map((a) => JSON.stringify(a)), toolArgs, text),
    trace_id: maybe(traceId),
    item: maybe(item),
  },
  { requiredKeys: [] },
);
const sample = fc.record(
  { output_text: maybe(text), output_json: maybe(json), output_tools: maybe(fc.array(json, { maxLength: 3 })), choices: maybe(fc.array(json, { maxLength: 2 })) },
  { requiredKeys: [] },
);
const gradeBody = fc.record({ sample: maybe(sample), item: maybe(item), trace_id: maybe(traceId) }, { requiredKeys: [] });
const graderConfig = fc.oneof(
  fc.record({ type: fc.constant('string_check'), name: text, input: maybe(fc.constantFrom('{{sample.output_text}}', '{{item.x.y.z}}', '{{')), reference: maybe(text), operation: maybe(fc.constantFrom('eq', 'ne', 'like', 'ilike', 'zz')) }, { requiredKeys: [] }),
  fc.record({ type: fc.constant('text_similarity'), name: text, input: maybe(text), reference: maybe(text), evaluation_metric: maybe(fc.constantFrom('fuzzy_match', 'bleu', 'rouge_l', 'cosine', 'nope')) }, { requiredKeys: [] }),
  fc.record({ type: fc.constant('multi'), name: text, graders: maybe(fc.dictionary(key, json, { maxKeys: 3 })), calculate_output: maybe(fc.oneof(text, fc.constantFrom('1/0', 'a+', '((((((1))))))', 'exp(1e9)'))) }, { requiredKeys: [] }),
  fc.record({ type: fc.constantFrom('score_model', 'label_model', 'python'), name: text, model: text, input: maybe(json), source: maybe(text) }, { requiredKeys: [] }),
  json,
);
const runBody = fc.record({ grader: maybe(graderConfig), model_sample: maybe(fc.oneof(text, sample)), sample: maybe(sample), item: maybe(item) }, { requiredKeys: [] });
const importBody = fc.record({ rollouts: maybe(fc.array(fc.oneof(json, fc.record({ trace_id: maybe(traceId), created_at: maybe(text), updated_at: maybe(text), item: maybe(item), budget: maybe(json), calls: maybe(fc.array(json, { maxLength: 3 })), grades: maybe(fc.array(json, { maxLength: 2 })) }, { requiredKeys: [] })), { maxLength: 3 })) }, { requiredKeys: [] });

// ---- requests ------------------------------------------------------------------------------------

/** The body as sent: JSON of the value, or text that is not quite JSON. */
const payloadOf = (value: fc.Arbitrary<unknown>): fc.Arbitrary<string> =>
  fc.oneof(
    { weight: 12, arbitrary: value.map(toBody) },
    // duplicate keys, a __proto__ key spelled out or escaped, truncated JSON, not JSON at all
    { weight: 1, arbitrary: value.map((v) => toBody(v).replace(/^\{/, '{"trace_id":"trace_f1","trace_id":1,')) },
    { weight: 1, arbitrary: value.map((v) => toBody(v).replace(/^\{/, '{"__proto__":{"polluted":true},"\\u005f_proto__":{"x":1},')) },
    { weight: 1, arbitrary: value.map((v) => toBody(v).slice(0, -1)) },
    { weight: 1, arbitrary: fc.oneof(text, fc.integer({ min: 10, max: 100_000 }).map((d) => '['.repeat(d) + ']'.repeat(d))) },
  );

interface Route {
  route: string;
  method: FuzzRequest['method'];
  path: fc.Arbitrary<string>;
  body?: fc.Arbitrary<unknown>;
}

/** Percent-encoded UTF-8 (a lone surrogate becomes U+FFFD, as a client would send it). */
const enc = (s: string) => encodeURIComponent(Buffer.from(s).toString());
const seg = fc.oneof(traceId, fc.constantFrom(...toolNames, ...graderNames)).map((s) => enc(s).slice(0, 3000));
const query = fc.dictionary(fc.constantFrom('limit', 'cursor', 'since', 'base_url', 'grader', 'x'), text, { maxKeys: 3 }).map((q) => {
  const s = new URLSearchParams(q).toString();
  return s ? `?${s.slice(0, 6000)}` : '';
});

const ROUTES: Route[] = [
  { route: 'tools', method: 'POST', path: fc.constant('/tools'), body: functionCall },
  { route: 'tools', method: 'POST', path: seg.map((s) => `/tools/${s}`), body: functionCall },
  { route: 'grade', method: 'POST', path: fc.constant('/grade'), body: gradeBody },
  { route: 'grade', method: 'POST', path: seg.map((s) => `/graders/${s}`), body: gradeBody },
  { route: 'grader-run', method: 'POST', path: fc.constantFrom('/v1/graders/run', '/v1/graders/validate'), body: runBody },
  { route: 'import', method: 'POST', path: fc.constant('/v1/rollouts/import'), body: importBody },
  { route: 'grade', method: 'POST', path: seg.map((s) => `/v1/rollouts/${s}/regrade`), body: fc.record({ grader: maybe(fc.constantFrom(...graderNames)) }, { requiredKeys: [] }) },
  { route: 'read', method: 'GET', path: fc.tuple(fc.constantFrom('/v1/rollouts', '/v1/tools', '/v1/job-config', '/healthz', '/readyz'), query).map(([p, q]) => p + q) },
  { route: 'read', method: 'GET', path: seg.map((s) => `/v1/rollouts/${s}`) },
  { route: 'end', method: 'DELETE', path: seg.map((s) => `/v1/rollouts/${s}`) },
  { route: 'none', method: 'POST', path: fc.tuple(text, query).map(([p, q]) => `/${enc(p).slice(0, 2000)}${q}`), body: json },
];

function requests(apiKey: string): fc.Arbitrary<FuzzRequest> {
  const auth = fc.oneof(
    { weight: 12, arbitrary: fc.constant({ authorization: `Bearer ${apiKey}` }) },
    { weight: 1, arbitrary: fc.constant({}) },
    { weight: 1, arbitrary: text.map((t) => ({ authorization: `Bearer ${t.replace(/[^\x20-\x7e]/g, '')}` })) },
    { weight: 1, arbitrary: fc.constant({ 'x-functions-key': apiKey, 'webhook-id': 'msg_1', 'webhook-timestamp': '1', 'webhook-signature': 'v1,xx' }) },
  );
  const contentType = fc.oneof({ weight: 12, arbitrary: fc.constant('application/json') }, { weight: 1, arbitrary: fc.constantFrom('text/plain', 'application/json; charset=latin1', 'multipart/form-data', '') });
  return fc.oneof(
    ...ROUTES.map((r) =>
      fc.record({ path: r.path, auth, contentType, payload: r.body ? payloadOf(r.body) : fc.constant(undefined), address: fc.noBias(fc.integer({ min: 1, max: 2 ** 24 - 2 })) }).map(
        ({ path, auth: a, contentType: ct, payload, address }): FuzzRequest => ({
          method: r.method,
          url: path,
          remoteAddress: `127.${address >> 16}.${(address >> 8) & 255}.${address & 255}`,
          route: r.route,
          headers: { ...a, ...(payload !== undefined && ct ? { 'content-type': ct } : {}) },
          ...(payload !== undefined ? { payload } : {}),
        }),
      ),
    ),
  );
}

// ---- the run ---------------------------------------------------------------------------------------

function gc(): () => void {
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
}

export interface FuzzOptions {
  requests: number;
  seed?: number;
  /** Requests in flight at once. */
  concurrency?: number;
  /** A request not answered within this is a hang. */
  hangMs?: number;
  log?: (line: string) => void;
}

export async function fuzzRoutes(o: FuzzOptions): Promise<FuzzResult> {
  const seed = o.seed ?? Date.now();
  const log = o.log ?? (() => {});
  const concurrency = o.concurrency ?? 32;
  const hangMs = o.hangMs ?? 30_000;
  const openai = await startFakeOpenAI();
  const server = await startTestServer({
    listen: false,
    gradersDir: join(repoRoot, 'graders'),
    env: { OPENAI_BASE_URL: openai.baseURL, OPENAI_API_KEY: 'sk-fuzz', RFT_RATE_LIMIT: '0', RFT_SQLITE_SYNC: 'normal', RFT_MODEL_MAX_RETRIES: '0', RFT_MODEL_TIMEOUT_MS: '2000' },
  });
  const app: FastifyInstance = server.app;
  const crashes: string[] = [];
  const onCrash = (e: unknown) => crashes.push(String((e as Error)?.stack ?? e));
  process.on('uncaughtException', onCrash);
  process.on('unhandledRejection', onCrash);
  const collect = gc();
  const heapMb: number[] = [];
  const result: FuzzResult = { requests: 0, byStatus: {}, byCode5xx: {}, msByRoute: {}, slowest: [], failures: [], heapMb, crashes, seconds: 0 };
  const arb = requests(server.key);
  const t0 = performance.now();
  log(`seed ${seed}`);
  try {
    const chunk = 100;
    const tenth = Math.max(1, Math.floor(o.requests / 10));
    let nextSample = 0;
    for (let done = 0; done < o.requests; ) {
      let batch = fc.sample(arb, { numRuns: Math.min(chunk, o.requests - done), seed: seed + done });
      let next = 0;
      const worker = async () => {
        while (next < batch.length) {
          const req = batch[next++]!;
          await send(app, req, hangMs, result);
        }
      };
      await Promise.all(Array.from({ length: concurrency }, worker));
      done += batch.length;
      batch = []; // what was sent is garbage now: the heap is sampled without it
      if (done >= nextSample) {
        collect();
        heapMb.push(process.memoryUsage().heapUsed / 2 ** 20);
        log(`${done} requests, ${result.failures.length} failures, heap ${heapMb.at(-1)!.toFixed(1)} MB, ${((performance.now() - t0) / 1000).toFixed(0)} s`);
        nextSample += tenth;
      }
    }
  } finally {
    result.seconds = (performance.now() - t0) / 1000;
    process.off('uncaughtException', onCrash);
    process.off('unhandledRejection', onCrash);
    await server.close();
    await openai.close();
  }
  return result;
}

async function send(app: FastifyInstance, req: FuzzRequest, hangMs: number, result: FuzzResult): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const hang = new Promise<'hang'>((r) => (timer = setTimeout(() => r('hang'), hangMs)));
  const t0 = performance.now();
  const res = await Promise.race([app.inject({ method: req.method, url: req.url, headers: req.headers, remoteAddress: req.remoteAddress, ...(req.payload !== undefined ? { payload: req.payload } : {}) }), hang]);
  clearTimeout(timer);
  const ms = performance.now() - t0;
  result.requests++;
  result.msByRoute[req.route] = (result.msByRoute[req.route] ?? 0) + ms;
  if (result.slowest.length < 5 || ms > result.slowest.at(-1)!.ms) {
    const status = res === 'hang' ? 0 : res.statusCode;
    result.slowest.push({ ms, request: describeFailure({ request: req, status, code: undefined, why: res === 'hang' ? 'hang' : 'status' }) });
    result.slowest.sort((a, b) => b.ms - a.ms).splice(5);
  }
  if (res === 'hang') {
    result.failures.push({ request: req, status: 0, code: undefined, why: 'hang' });
    return;
  }
  result.byStatus[res.statusCode] = (result.byStatus[res.statusCode] ?? 0) + 1;
  if (res.statusCode < 500) return;
  let code: string | undefined;
  try {
    code = (JSON.parse(res.body) as { error?: { code?: string } }).error?.code;
  } catch {
    code = undefined;
  }
  const k = `${res.statusCode} ${code ?? '-'} ${req.route}`;
  result.byCode5xx[k] = (result.byCode5xx[k] ?? 0) + 1;
  const allowed = code !== undefined && (ALLOWED_5XX.any!.test(code) || (ALLOWED_5XX[req.route]?.test(code) ?? false));
  if (!allowed) result.failures.push({ request: req, status: res.statusCode, code, why: 'status' });
}

/** A failure, short enough to read: method, url, status, code and the start of the body. */
export function describeFailure(f: FuzzFailure): string {
  const body = f.request.payload === undefined ? '' : ` ${f.request.payload.length} bytes: ${JSON.stringify(f.request.payload.slice(0, 160))}`;
  return `${f.why === 'hang' ? 'HANG' : f.status} ${f.code ?? '-'} ${f.request.method} ${f.request.url.slice(0, 120)}${body}`;
}
