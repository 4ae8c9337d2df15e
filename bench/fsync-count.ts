// Counts the fdatasyncs of the store per step of a session, each door (issue 41's profile of one session at a
// time): the server in this process, fs.fdatasync counted, sessions one after another as bench/doors-peers.ts
// plays them.   node --conditions=rft-source --import tsx bench/fsync-count.ts [sessions]   (default 20)
import fs, { mkdtempSync, rmSync } from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

let syncs = 0;
const real = fs.fdatasync;
fs.fdatasync = ((fd: number, cb: (e: Error | null) => void) => {
  syncs++;
  real(fd, cb);
}) as typeof fs.fdatasync;
syncBuiltinESMExports();
const { buildApp } = await import('../src/app.js');
const { loadConfig } = await import('../src/config.js');

const sessions = Number(process.argv[2] ?? 20);
const dataDir = mkdtempSync(join(tmpdir(), 'rft-fsync-'));
const app = await buildApp(loadConfig({
  RFT_DATA_DIR: dataDir,
  RFT_API_KEYS: 'bench:bench-key-0123456789abcdef',
  RFT_TOOLS_DIR: join(import.meta.dirname, 'units/tools'),
  RFT_GRADERS_DIR: join(import.meta.dirname, 'units/graders'),
  RFT_ENVIRONMENTS: join(import.meta.dirname, 'units/environments'),
  RFT_LOG_LEVEL: 'silent',
  RFT_SANDBOX: 'none',
  RFT_RATE_LIMIT: '0',
  RFT_SQLITE_SYNC: 'full',
  RFT_NEMO_GYM_PORT: '0',
}));
await app.listen({ host: '127.0.0.1', port: 0 });
const a = app.server.address();
const main = `http://127.0.0.1:${typeof a === 'object' && a ? a.port : 0}`;
const gym = app.rft.nemoGym!.url;

const counts: Record<string, number> = {};
async function post(step: string, url: string, headers: Record<string, string>, body?: string): Promise<Response> {
  const before = syncs;
  const r = await fetch(url, { method: 'POST', headers: { ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers }, body: body ?? null });
  await r.text();
  if (!r.ok) throw new Error(`${step}: ${r.status}`);
  counts[step] = (counts[step] ?? 0) + syncs - before;
  return r;
}
const row = { responses_create_params: { input: [{ role: 'user', content: 'q' }], tools: [{ type: 'function', name: 'noop', parameters: { type: 'object', properties: {} }, strict: true }] }, reference_answer: '42' };
const key = { 'x-api-key': 'bench-key-0123456789abcdef' };
for (let k = 0; k < sessions; k++) {
  const seeded = await post('gym seed_session', `${gym}/seed_session`, {}, JSON.stringify(row));
  const cookie = seeded.headers.get('set-cookie')!.split(';')[0]!;
  await post('gym noop', `${gym}/noop`, { cookie }, JSON.stringify({ q: String(k) }));
  const output = [
    { type: 'function_call', id: 'fc', call_id: 'c', name: 'noop', arguments: JSON.stringify({ q: String(k) }), status: 'completed' },
    { type: 'message', id: 'm', status: 'completed', role: 'assistant', content: [{ type: 'output_text', text: '42', annotations: [] }] },
  ];
  await post('gym verify', `${gym}/verify`, { cookie }, JSON.stringify({ ...row, response: { id: 'r', created_at: 0, model: 'm', object: 'response', output, parallel_tool_calls: false, tool_choice: 'auto', tools: [] } }));
}
const orsCounts = async () => {
  for (let k = 0; k < sessions; k++) {
    const before = syncs;
    const r = await fetch(`${main}/create_session`, { method: 'POST', headers: { ...key, accept: 'text/event-stream' } });
    const sid = /event: task_id\r?\ndata: (\S+)/.exec(await r.text())![1]!;
    counts['ors create_session'] = (counts['ors create_session'] ?? 0) + syncs - before;
    const h = { ...key, 'x-session-id': sid };
    await post('ors create', `${main}/create`, h, JSON.stringify({ env_name: 'bench', split: 'train', index: 0 }));
    await post('ors noop', `${main}/bench/call`, { ...h, accept: 'text/event-stream' }, JSON.stringify({ name: 'noop', input: { q: String(k) } }));
    await post('ors submit', `${main}/bench/call`, { ...h, accept: 'text/event-stream' }, JSON.stringify({ name: 'submit', input: { answer: '42' } }));
    await post('ors delete_session', `${main}/delete_session`, h);
  }
};
await orsCounts();
await app.close();
rmSync(dataDir, { recursive: true, force: true });
console.log(`fdatasyncs per session (${sessions} sessions, one at a time; each counted from its request until its reply is read):`);
for (const [step, c] of Object.entries(counts)) console.log(`  ${step.padEnd(22)} ${(c / sessions).toFixed(2)}`);
