// A burst of new rollouts at once over real HTTP against a server in its own process (bwrap, the
// default cap, queue and queue timeout; a short TTL): N rollouts x C `shell` calls each, every call
// checking its own output (an echo of its rollout and call, and the line count of a file the
// rollout appends to, which must equal the call's number). Prints errors, 5xx, 503s, empty and wrong
// outputs, p50/p99 per call (first calls and later calls apart), the server's peak RSS (and its
// supervisor's), where the server's time went (from its /metrics: admission wait, sandbox creation,
// the tool's own work, the record's writes and HTTP), and what is left once the TTL has passed:
// sandbox processes, directories, uid claims.
// With a warm pool (RFT_SANDBOX_WARM, default 2; its learning off: a fixed size), the burst starts once the pool is full, as a
// training step finds it after the previous step's pause.
// Run: node --conditions=rft-source --import tsx bench/burst.ts [rollouts=500] [calls=5] [ttl-ms=5000] [warm=2]
import { readdir, readFile, rm, mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Agent, request } from 'undici';
import { burstLines, runBurst } from './lib/burst.js';
import { childrenOf, metrics, rss, sumOf } from './lib/server-stats.js';
import { instanceIdFor } from '../src/sandbox/instance-id.js';
import { spawnServer } from '../test/helpers/child-server.js';
import { repoRoot } from '../test/helpers/server.js';
import { liveProcessesOf } from '../test/sandbox/helpers.js';

const rollouts = Number(process.argv[2] ?? 500);
const calls = Number(process.argv[3] ?? 5);
const ttlMs = Number(process.argv[4] ?? 5_000);
const warm = Number(process.argv[5] ?? 2);
const KEY = 'bench-burst-key-0123456789abcdef';
const UIDS = '/run/rft-endpoints/uids';

async function claimsOf(instance: string): Promise<number[]> {
  const uids: number[] = [];
  for (const name of await readdir(UIDS).catch(() => [] as string[])) {
    const owner = await readFile(join(UIDS, name), 'utf8').catch(() => '');
    if (owner.includes(` ${instance} `)) uids.push(Number(name));
  }
  return uids;
}

const pooled = async (id: string): Promise<boolean> =>
  ((JSON.parse(await readFile(join(sandboxesRoot, id, 'meta.json'), 'utf8').catch(() => '{}')) as { traceId?: string }).traceId ?? '') === '(pooled)';

const dataDir = await mkdtemp(join(tmpdir(), 'rft-bench-burst-'));
const instance = instanceIdFor(dataDir);
const sandboxesRoot = join(tmpdir(), 'rft-endpoints', instance);
const load = (await readFile('/proc/loadavg', 'utf8')).split(' ').slice(0, 3).join(' ');
console.log(`burst bench: ${rollouts} new rollouts at once x ${calls} shell calls, bwrap, default cap and queue, warm pool ${warm}, TTL ${ttlMs} ms; load average before ${load}`);
const srv = await spawnServer(
  {
    RFT_DATA_DIR: dataDir, RFT_API_KEYS: `b:${KEY}`, RFT_RATE_LIMIT: '0', RFT_SANDBOX: 'bwrap', RFT_SANDBOX_TTL_MS: String(ttlMs), RFT_SANDBOX_WARM: String(warm), RFT_SANDBOX_WARM_MAX_MB: '0',
    RFT_TOOLS_DIR: join(repoRoot, 'tools'), RFT_GRADERS_DIR: join(repoRoot, 'graders'), RFT_LOG_LEVEL: 'error',
  },
  120_000,
);
const pid = srv.proc.pid!;
const dispatcher = new Agent({ connections: rollouts, headersTimeout: 0, bodyTimeout: 0 });
try {
  // The server is up; the supervisor starts with the first sandbox (a warm-up rollout, not counted).
  await request(`${srv.url}/tools`, {
    method: 'POST', dispatcher, headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify({ type: 'function_call', call_id: 'w', name: 'shell', arguments: JSON.stringify({ command: 'true' }), trace_id: 'trace_warmup', item: {} }),
  }).then((r) => r.body.text());
  const supervisor = (await childrenOf(pid))[0] ?? 0;
  const pooledNow = async (): Promise<number> => {
    let k = 0;
    for (const x of (await readdir(sandboxesRoot).catch(() => [] as string[])).filter((y) => y.startsWith('sb_'))) if (await pooled(x)) k++;
    return k;
  };
  const fillStart = performance.now();
  while ((await pooledNow()) < warm) await new Promise((r) => setTimeout(r, 200));
  if (warm > 2) console.log(`  warm pool of ${warm} filled in ${((performance.now() - fillStart) / 1000).toFixed(1)} s`);
  let peak = await rss(pid);
  let supPeak = await rss(supervisor);
  const uids = new Set<number>();
  const sampler = setInterval(() => {
    void rss(pid).then((v) => (peak = Math.max(peak, v)));
    void rss(supervisor).then((v) => (supPeak = Math.max(supPeak, v)));
    void claimsOf(instance).then((us) => us.forEach((u) => uids.add(u)));
  }, 100);
  const before = await metrics(srv.url, KEY);
  const burst = await runBurst({ url: srv.url, key: KEY, dispatcher, rollouts, calls, tracePrefix: 'trace_burst' });
  clearInterval(sampler);
  const after = await metrics(srv.url, KEY);
  const d = (name: string): number => sumOf(after, name) - sumOf(before, name);
  const all = [...burst.first, ...burst.later];
  console.log('');
  for (const line of burstLines(burst)) console.log(`  ${line}`);
  console.log(`  server peak RSS ${(peak / 1024 / 1024).toFixed(0)} MB (supervisor ${(supPeak / 1024 / 1024).toFixed(1)} MB); sandboxes created ${d('rft_sandbox_create_duration_seconds_count')}`);
  // Where the server's time went, summed over all calls (seconds of request time, overlapping).
  const http = d('rft_http_request_duration_seconds_sum{route="/tools"');
  const tool = d('rft_tool_call_duration_seconds_sum{tool="shell"}');
  const wait = d('rft_sandbox_queue_wait_seconds_sum');
  const create = d('rft_sandbox_create_duration_seconds_sum');
  const n = all.length;
  const ms = (s: number): string => `${((s / n) * 1000).toFixed(1).padStart(7)} ms/call`;
  console.log(`  server time per call (means): HTTP request ${ms(http)} = tool ${ms(tool)} + record and HTTP ${ms(http - tool)}`);
  console.log(`                                tool = admission wait ${ms(wait)} + sandbox creation ${ms(create)} + command ${ms(tool - wait - create)}`);
  console.log(`  client time not in the server's request time ${ms(all.reduce((a, b) => a + b, 0) / 1000 - http)} (connection queue, event loop lag, parse)`);

  // After the TTL (the sweeper runs every TTL/4, at least every second), what is left of the burst.
  // The warm pool keeps two prepared sandboxes (their own uids, marked "(pooled)"): not the burst's.
  const left = async (): Promise<{ dirs: number; claims: number[]; pooledUids: Set<number> }> => {
    let dirs = 0;
    for (const x of (await readdir(sandboxesRoot).catch(() => [] as string[])).filter((y) => y.startsWith('sb_'))) if (!(await pooled(x))) dirs++;
    const claims: number[] = [];
    const pooledUids = new Set<number>();
    for (const u of await claimsOf(instance)) {
      const id = (await readFile(join(UIDS, String(u)), 'utf8').catch(() => '')).trim().split(' ').pop() ?? '';
      if (await pooled(id)) pooledUids.add(u);
      else claims.push(u);
    }
    return { dirs, claims, pooledUids };
  };
  const waitStart = performance.now();
  let rest = await left();
  while ((rest.dirs > 0 || rest.claims.length > 0) && performance.now() - waitStart < ttlMs + 60_000) {
    await new Promise((r) => setTimeout(r, 500));
    rest = await left();
  }
  const burstUids = [...uids].filter((u) => !rest.pooledUids.has(u));
  const procs = (await Promise.all(burstUids.map((u) => liveProcessesOf(u)))).reduce((a, p) => a + p.length, 0);
  console.log(
    `  ${((performance.now() - waitStart) / 1000).toFixed(1)} s after the burst (TTL ${ttlMs / 1000} s): processes of the burst's ${burstUids.length} uids ${procs}, ` +
      `sandbox dirs ${rest.dirs}, uid claims ${rest.claims.length} (warm pool kept: ${rest.pooledUids.size})`,
  );
} finally {
  await srv.stop();
  await dispatcher.close();
  await rm(dataDir, { recursive: true, force: true });
}
