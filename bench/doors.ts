// Benchmark: what the doors add. A no-op tool call and a grade through each door against the same through
// Agent RFT's POST /tools and POST /grade, on one server (bench/pipeline-server.ts full:gym, sync=full), same
// run, 50 connections, autocannon:
// - NeMo Gym: POST /noop with a session's cookie; POST /verify of a seeded session.
// - ORS: POST /bench/call {name: noop} with a session's X-Session-ID (a server-sent event stream: task_id,
//   then the result as `end`); POST /bench/call {name: submit} of a session created for it.
// Every tool call is a new call (a door: one of 50 sessions, taken in turn; /tools: a new call id); every grade
// a new rollout's (the doors' sessions are created before the clock starts).
//
//   node --conditions=rft-source --import tsx bench/doors.ts [seconds]     (default 5)
import { loadavg } from 'node:os';
import { fmt, load, startServer, stopServer, type LoadResult } from './lib/load.js';

const seconds = Number(process.argv[2] ?? 5);
const connections = 50;
const auth = { authorization: 'Bearer bench-key-0123456789abcdef' };
const server = await startServer('full:gym');
const [url, doorUrl] = server.url.split(' ') as [string, string];
const main = { ...server, url };
const door = { ...server, url: doorUrl };

const row = { reference_answer: '42', tool_budget: 1_000_000_000 };
const gymRow = { responses_create_params: { input: [{ role: 'user', content: 'q' }], tools: [{ type: 'function', name: 'noop', parameters: {} }] }, ...row };
const seedOne = async (): Promise<string> => {
  const res = await fetch(`${doorUrl}/seed_session`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(gymRow) });
  return res.headers.get('set-cookie')!.split(';')[0]!;
};

/** An ORS session on the bench environment's one row (create_session's task_id event, then /create). */
const orsSession = async (): Promise<string> => {
  const stream = await (await fetch(`${url}/create_session`, { method: 'POST', headers: { ...orsKey, 'content-type': 'application/json' }, body: '{}' })).text();
  const sid = /event: task_id\ndata: (\S+)/.exec(stream)![1]!;
  await fetch(`${url}/create`, { method: 'POST', headers: { ...orsKey, 'x-session-id': sid, 'content-type': 'application/json' }, body: JSON.stringify({ split: 'train', index: 0, env_name: 'bench' }) });
  return sid;
};
const orsKey = { 'x-api-key': auth.authorization.slice('Bearer '.length) };
const manySessions = async (make: () => Promise<string>, count: number): Promise<string[]> => {
  const out: string[] = [];
  for (let i = 0; i < count; i += 100) out.push(...(await Promise.all(Array.from({ length: 100 }, make))));
  return out;
};
/** Enough sessions for the whole timed run of grades and its warm-up (about 1,500 grades/s at most here). */
const gradeSessions = (seconds + 2) * 1_500;
const orsCall = (sid: () => string, body: () => string) =>
  load(main, '/bench/call', body, { seconds, connections, headers: { ...orsKey, accept: 'text/event-stream' }, requestHeaders: () => ({ 'x-session-id': sid() }) });

let n = 0;
const rows: [string, LoadResult][] = [];
try {
  rows.push(['POST /tools (noop)', await load(main, '/tools', () => JSON.stringify({ type: 'function_call', call_id: `call_${++n}`, name: 'noop', arguments: '{}', trace_id: `trace_${n % 50}`, item: row }), { seconds, connections, headers: auth })]);
  const cookies = await Promise.all(Array.from({ length: connections }, seedOne));
  let c = 0;
  // distinct bodies: an identical request while its predecessor's reply is unwritten is that request's retry
  rows.push(['door POST /noop', await loadWithCookies(() => cookies[c++ % cookies.length]!, '/noop', () => JSON.stringify({ q: String(++n) }))]);
  const sids = await Promise.all(Array.from({ length: connections }, orsSession));
  rows.push(['ORS /bench/call noop', await orsCall(() => sids[c++ % sids.length]!, () => JSON.stringify({ name: 'noop', input: { q: String(++n) } }))]);

  const answer = (i: number) => (i % 2 ? '42' : 'about 42');
  rows.push(['POST /grade', await load(main, '/grade', () => JSON.stringify({ sample: { output_text: answer(++n), output_tools: [], choices: [] }, item: row, trace_id: `trace_g${n}` }), { seconds, connections, headers: auth })]);
  // Enough seeded sessions for the whole timed run and its warm-up (about 1,500 grades/s at most here).
  const sessions = await manySessions(seedOne, gradeSessions);
  let s = 0;
  const episode = (i: number) => ({ output: [{ type: 'message', role: 'assistant', content: [{ type: 'output_text', text: answer(i) }] }] });
  rows.push(['door POST /verify', await loadWithCookies(() => sessions[s++ % sessions.length]!, '/verify', () => JSON.stringify({ ...gymRow, response: episode(s) }))]);
  const submits = await manySessions(orsSession, gradeSessions);
  let o = 0;
  rows.push(['ORS /bench/call submit', await orsCall(() => submits[o++ % submits.length]!, () => JSON.stringify({ name: 'submit', input: { answer: answer(o) } }))]);
} finally {
  await stopServer(server);
}

function loadWithCookies(cookie: () => string, path: string, body: () => string): Promise<LoadResult> {
  return load(door, path, body, { seconds, connections, requestHeaders: () => ({ cookie: cookie() }) });
}

console.log(`load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
console.log(`${'route'.padEnd(24)}${'req/s'.padStart(9)}${'p50 ms'.padStart(9)}${'p99 ms'.padStart(9)}${'errors'.padStart(9)}${'srv us'.padStart(9)}  door vs Agent RFT (time per request, p99, server CPU per request)`);
for (const [i, [name, r]] of rows.entries()) {
  const base = rows[i - (i % 3)]![1];
  const vs = i % 3 ? `${(base.rps / r.rps).toFixed(2)}x, p99 ${(r.p99 / base.p99).toFixed(2)}x, CPU ${(r.serverUs / base.serverUs).toFixed(2)}x` : 'baseline';
  console.log(`${name.padEnd(24)}${fmt(r.rps, 0)}${fmt(r.p50)}${fmt(r.p99)}${fmt(r.errors, 0)}${fmt(r.serverUs, 0)}  ${vs}`);
}
