// The emulator's cost: its own time per tool call (excluding waits on the server and the model,
// from timestamps around every await), and rollouts per second at concurrency 1, 8 and 64, against
// a real server (child process, finqa tools, answer_match grader) and a model that answers at once.
// Baseline, measured in the same run: a bare POST /tools round trip from undici.
// Run: node --conditions=rft-source --import tsx bench/emulator.ts [rollouts-per-level]
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { ServerClient } from '../src/cli/rollout/http.js';
import { ModelClient } from '../src/cli/rollout/model.js';
import { pool } from '../src/cli/rollout/pool.js';
import { runRollout, type RolloutResult } from '../src/cli/rollout/run.js';
import type { DatasetRow } from '../src/cli/rollout/dataset.js';
import { startScriptedModel } from '../test/helpers/scripted-model.js';

const root = resolve(import.meta.dirname, '..');
const perLevel = Number(process.argv[2] ?? 128);
const key = 'bench-key-0123456789abcdef';

function freePort(): Promise<number> {
  return new Promise((res) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => res(port));
    });
  });
}

async function startServer() {
  const dir = mkdtempSync(join(tmpdir(), 'rft-bench-emu-'));
  const units = (names: string[], kind: string) => {
    const d = join(dir, kind);
    mkdirSync(d, { recursive: true });
    for (const n of names) writeFileSync(join(d, `${n}.ts`), `export { default } from ${JSON.stringify(join(root, kind, `${n}.ts`))};\n`);
    return d;
  };
  const port = await freePort();
  const child = spawn(process.execPath, [join(root, 'bin/rft-endpoints.js'), 'serve'], {
    cwd: root,
    env: {
      PATH: process.env.PATH ?? '',
      HOST: '127.0.0.1',
      PORT: String(port),
      RFT_DATA_DIR: join(dir, 'data'),
      RFT_API_KEYS: `bench:${key}`,
      RFT_TOOLS_DIR: units(['search_docs', 'list_docs', 'read_doc'], 'tools'),
      RFT_GRADERS_DIR: units(['answer_match'], 'graders'),
      RFT_SANDBOX: 'none',
      RFT_LOG_LEVEL: 'silent',
      RFT_RATE_LIMIT: '0',
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 200; i++) {
    try {
      if ((await fetch(`${url}/healthz`)).ok) break;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url,
    stop: () => {
      child.kill('SIGTERM');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const server = await startServer();
const client = new ServerClient(server.url, { key }, { connections: 256 });
const tools = ((await client.json<{ tools: DatasetRow['tools'] }>('GET', '/v1/tools')).tools ?? []);
const row: DatasetRow = {
  messages: [{ role: 'user', content: 'What was Halvorsen second quarter 2025 revenue?' }],
  tools,
  reference_answer: '52.3',
};
const model = await startScriptedModel({
  script: (ctx) =>
    ctx.turn === 0
      ? { calls: [{ name: 'search_docs', arguments: { query: ctx.userText } }, { name: 'list_docs', arguments: {} }] }
      : ctx.turn === 1
        ? { calls: [{ name: 'read_doc', arguments: { doc_id: /"doc_id"\s*:\s*"([^"]+)"/.exec(ctx.toolOutputs.join())?.[1] ?? 'x' } }] }
        : { text: 'Answer: 52.3' },
});
const modelClient = new ModelClient({ model: 'scripted', api: 'responses', baseURL: model.baseURL });

// Baseline: the same tool call, sent bare (no model, no bookkeeping), one at a time.
async function baseline(n: number): Promise<number> {
  const trace = `trace_bench-baseline-${Date.now()}`;
  const t0 = performance.now();
  for (let i = 0; i < n; i++) {
    const body = { type: 'function_call', id: `fc_${i}`, call_id: `call_${i}`, name: 'list_docs', arguments: '{}', trace_id: `${trace}-${i}`, item: row };
    const r = await client.send('POST', '/tools', body);
    if (r.status !== 200) throw new Error(`baseline call answered ${r.status}`);
  }
  return (performance.now() - t0) / n;
}

async function level(concurrency: number, n: number) {
  const results: RolloutResult[] = [];
  const t0 = performance.now();
  await pool(Array.from({ length: n }, (_, i) => i), concurrency, async (i) => {
    results.push(await runRollout(0, i, row, { server: client, model: modelClient, maxSteps: 10, graderPath: '/grade' }));
  });
  const wall = (performance.now() - t0) / 1000;
  const bad = results.filter((r) => r.discarded);
  if (bad.length) throw new Error(`${bad.length} rollouts discarded: ${bad[0]!.error}`);
  const calls = results.reduce((s, r) => s + r.tool_calls, 0);
  const own = results.reduce((s, r) => s + r.own_ms, 0);
  return { concurrency, n, perSecond: n / wall, ownPerCall: own / calls, ownPerRollout: own / n, latency: results.reduce((s, r) => s + r.latency_ms, 0) / n };
}

await level(4, 16); // warm up the JIT, the pools and the server's caches
const baseMs = await baseline(200);
const rows = [];
for (const c of [1, 8, 64]) rows.push(await level(c, perLevel));

const r1 = rows[0]!.perSecond;
console.log(`emulator bench: ${perLevel} rollouts per level, each 3 model turns, 3 tool calls (2 parallel), 1 grade, 1 budget read`);
console.log(`baseline: bare POST /tools round trip ${baseMs.toFixed(3)} ms\n`);
console.log('concurrency  rollouts/s  vs c=1  mean latency ms  own ms/rollout  own ms/tool call  own/baseline call');
for (const r of rows) {
  console.log(
    `${String(r.concurrency).padStart(11)}  ${r.perSecond.toFixed(1).padStart(10)}  ${(r.perSecond / r1).toFixed(2).padStart(6)}  ` +
      `${r.latency.toFixed(1).padStart(15)}  ${r.ownPerRollout.toFixed(3).padStart(14)}  ${r.ownPerCall.toFixed(3).padStart(16)}  ${(r.ownPerCall / baseMs).toFixed(3).padStart(17)}`,
  );
}

await client.close();
await model.close();
server.stop();
