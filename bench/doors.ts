// Benchmark: what the doors add, each against Agent RFT's own route on the same server, same run, 50
// connections, autocannon (bench/pipeline-server.ts full:gym:private, sync=full):
// - NeMo Gym: POST /noop with a session's cookie; POST /verify of a seeded session.
// - ORS: POST /bench/call {name: noop} with a session's X-Session-ID (a server-sent event stream: task_id,
//   then the result as `end`); POST /bench/call {name: submit} of a session created for it.
// - Reward door: slime's request to POST /reward/{grader}, against POST /grade.
// Every tool call is a new call (a door: one of 50 sessions, taken in turn; /tools: a new call id); every grade
// a new rollout's (the doors' sessions are created before the clock starts). Then, on a second server with
// bwrap: run_code (a fresh sandbox per run) against a shell call in a rollout's sandbox.
//
//   node --conditions=rft-source --import tsx bench/doors.ts [seconds]     (default 5)
import { loadavg } from 'node:os';
import { fmt, load, startServer, stopServer, type LoadResult } from './lib/load.js';

const seconds = Number(process.argv[2] ?? 5);
const connections = 50;
const auth = { authorization: 'Bearer bench-key-0123456789abcdef' };
const server = await startServer('full:gym:private');
const [url, doorUrl, privateUrl] = server.url.split(' ') as [string, string, string];
const main = { ...server, url };
const door = { ...server, url: doorUrl };
const privateDoors = { ...server, url: privateUrl };
const loadBefore = loadavg();

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
/** A route's result and the row it is compared with (its own index: the baseline). */
const rows: [string, LoadResult, number][] = [];
const push = (name: string, r: LoadResult, base = rows.length) => rows.push([name, r, base]);
try {
  push('POST /tools (noop)', await load(main, '/tools', () => JSON.stringify({ type: 'function_call', call_id: `call_${++n}`, name: 'noop', arguments: '{}', trace_id: `trace_${n % 50}`, item: row }), { seconds, connections, headers: auth }));
  const cookies = await Promise.all(Array.from({ length: connections }, seedOne));
  let c = 0;
  // distinct bodies: an identical request while its predecessor's reply is unwritten is that request's retry
  push('door POST /noop', await loadWithCookies(() => cookies[c++ % cookies.length]!, '/noop', () => JSON.stringify({ q: String(++n) })), 0);
  const sids = await Promise.all(Array.from({ length: connections }, orsSession));
  push('ORS /bench/call noop', await orsCall(() => sids[c++ % sids.length]!, () => JSON.stringify({ name: 'noop', input: { q: String(++n) } })), 0);

  const answer = (i: number) => (i % 2 ? '42' : 'about 42');
  const grade = rows.length;
  push('POST /grade', await load(main, '/grade', () => JSON.stringify({ sample: { output_text: answer(++n), output_tools: [], choices: [] }, item: row, trace_id: `trace_g${n}` }), { seconds, connections, headers: auth }));
  // Enough seeded sessions for the whole timed run and its warm-up (about 1,500 grades/s at most here).
  const sessions = await manySessions(seedOne, gradeSessions);
  let s = 0;
  const episode = (i: number) => ({ output: [{ type: 'message', role: 'assistant', content: [{ type: 'output_text', text: answer(i) }] }] });
  push('door POST /verify', await loadWithCookies(() => sessions[s++ % sessions.length]!, '/verify', () => JSON.stringify({ ...gymRow, response: episode(s) })), grade);
  const submits = await manySessions(orsSession, gradeSessions);
  let o = 0;
  push('ORS /bench/call submit', await orsCall(() => submits[o++ % submits.length]!, () => JSON.stringify({ name: 'submit', input: { answer: answer(o) } })), grade);
  // slime's request to the reward door (the label is the reference answer): a new rollout and grade each.
  push('POST /reward (slime)', await load(privateDoors, '/reward/reference_match', () => JSON.stringify({ prompt: 'q', response: answer(++n), label: '42' }), { seconds, connections }), grade);
} finally {
  await stopServer(server);
}

// run_code (a fresh bwrap sandbox per run) against a shell call in a rollout's sandbox (16 rollouts in turn), 4 connections.
const sandboxed = await startServer('full:private:bwrap');
try {
  const [sbUrl, sbPrivate] = sandboxed.url.split(' ') as [string, string];
  const shell = rows.length;
  const command = JSON.stringify({ command: "python3 -c 'print(1)'" });
  push('POST /tools (shell)', await load({ ...sandboxed, url: sbUrl }, '/tools', () => JSON.stringify({ type: 'function_call', call_id: `call_${++n}`, name: 'shell', arguments: command, trace_id: `trace_s${n % 16}`, item: row }), { seconds, connections: 4, headers: auth }));
  push('POST /run_code', await load({ ...sandboxed, url: sbPrivate }, '/run_code', () => JSON.stringify({ code: 'print(1)', language: 'python', run_timeout: 10 }), { seconds, connections: 4 }), shell);
} finally {
  await stopServer(sandboxed);
}

function loadWithCookies(cookie: () => string, path: string, body: () => string): Promise<LoadResult> {
  return load(door, path, body, { seconds, connections, requestHeaders: () => ({ cookie: cookie() }) });
}

console.log(`${'route'.padEnd(24)}${'req/s'.padStart(9)}${'p50 ms'.padStart(9)}${'p99 ms'.padStart(9)}${'errors'.padStart(9)}${'srv us'.padStart(9)}  door vs Agent RFT (time per request, p99, server CPU per request)`);
for (const [i, [name, r, b]] of rows.entries()) {
  const base = rows[b]![1];
  const vs = b !== i ? `${(base.rps / r.rps).toFixed(2)}x, p99 ${(r.p99 / base.p99).toFixed(2)}x, CPU ${(r.serverUs / base.serverUs).toFixed(2)}x (vs ${rows[b]![0]})` : 'baseline';
  console.log(`${name.padEnd(24)}${fmt(r.rps, 0)}${fmt(r.p50)}${fmt(r.p99)}${fmt(r.errors, 0)}${fmt(r.serverUs, 0)}  ${vs}`);
}
console.log(`load average (1, 5, 15 min): before ${loadBefore.map((v) => v.toFixed(2)).join(', ')}, after ${loadavg().map((v) => v.toFixed(2)).join(', ')}`);
