// Big answers of a bridged server against everyone else's calls (issue 26): `--others` rollouts call
// `shell echo hi` in a loop while `--readers` rollouts read `--mb` MB each through a sandboxed MCP
// server (test/mcp/fixtures/big-output-server.mjs, one JSON-RPC line per answer, as
// server-filesystem's read_text_file sends a file), against the same calls with no readers, phases
// alternated (quiet, readers, quiet, readers) so the machine's drift weighs on both alike.
// Run: node --conditions=rft-source --import tsx bench/mcp-flood.ts [--driver bwrap|docker] [--others 50] [--readers 3] [--mb 20] [--calls 4] [--rounds 2]
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { startTestServer } from '../test/helpers/server.js';
import { callTool, writeMcpJson } from '../test/mcp/helpers.js';

const { values } = parseArgs({
  options: {
    driver: { type: 'string', default: 'bwrap' },
    others: { type: 'string', default: '50' },
    readers: { type: 'string', default: '3' },
    mb: { type: 'string', default: '20' },
    calls: { type: 'string', default: '4' },
    rounds: { type: 'string', default: '2' },
  },
});
const driver = values.driver as 'bwrap' | 'docker';
const [others, readers, calls, rounds] = [values.others, values.readers, values.calls, values.rounds].map(Number) as [number, number, number, number];
const bytes = Number(values.mb) * 1_000_000;

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN;
}

const fixtures = join(import.meta.dirname, '../test/mcp/fixtures');
const srv = await startTestServer({
  env: {
    RFT_SANDBOX: driver,
    RFT_RATE_LIMIT: '0',
    RFT_SANDBOX_CAP: String(others + readers + 8),
    RFT_TOOL_TIMEOUT_MS: '300000',
    RFT_MCP_CONFIG: writeMcpJson({
      big: { command: 'node', args: [join(fixtures, 'big-output-server.mjs')], sandbox: true, mounts: [fixtures], prefix: 'big_' },
    }),
  },
});
console.log(`MCP flood bench: driver ${driver}, ${others} rollouts calling shell (${calls} calls each per phase), ${readers} reading ${values.mb} MB each; node ${process.version}`);

async function timedCall(trace: string, name: string, args: unknown, check: (output: string) => boolean): Promise<number> {
  const t0 = performance.now();
  const r = await callTool(srv, trace, name, args);
  const took = performance.now() - t0;
  if (r.status !== 200 || !check(r.output)) throw new Error(`${name}: ${r.status} ${r.output.slice(0, 300)}`);
  return took;
}

try {
  const otherTraces = Array.from({ length: others }, () => `trace_${randomUUID()}`);
  const readerTraces = Array.from({ length: readers }, () => `trace_${randomUUID()}`);
  // Every sandbox and instance up before anything is measured.
  await Promise.all([
    ...otherTraces.map((t) => callTool(srv, t, 'shell', { command: 'echo up' })),
    ...readerTraces.map((t) => callTool(srv, t, 'big_echo', { message: 'up' })),
  ]);

  const quiet: number[] = [];
  const loaded: number[] = [];
  const reads: number[] = [];
  const loop = { quiet: 0, loaded: 0 };
  for (let round = 0; round < rounds; round++) {
    for (const withReaders of [false, true]) {
      const delay = monitorEventLoopDelay({ resolution: 10 });
      delay.enable();
      let running = true;
      const readerLoops = withReaders
        ? readerTraces.map(async (t) => {
            while (running) reads.push(await timedCall(t, 'big_big', { bytes }, (o) => o.startsWith('AAAA') && o.includes('[output truncated: ')));
          })
        : [];
      // Readers started first: their answers are streaming while the shell calls run.
      if (withReaders) await new Promise((r) => setTimeout(r, 500));
      const xs = withReaders ? loaded : quiet;
      await Promise.all(
        otherTraces.map(async (t) => {
          for (let i = 0; i < calls; i++) xs.push(await timedCall(t, 'shell', { command: 'echo hi' }, (o) => o.includes('hi')));
        }),
      );
      running = false;
      await Promise.all(readerLoops);
      delay.disable();
      const key = withReaders ? 'loaded' : 'quiet';
      loop[key] = Math.max(loop[key], delay.max / 1e6);
    }
  }
  const row = (label: string, xs: number[], base?: number[]) =>
    console.log(
      `  ${`${label} (n=${xs.length})`.padEnd(52)} p50 ${pct(xs, 50).toFixed(0).padStart(6)} ms  p99 ${pct(xs, 99).toFixed(0).padStart(6)} ms${base ? `   x${(pct(xs, 50) / pct(base, 50)).toFixed(2)} p50, x${(pct(xs, 99) / pct(base, 99)).toFixed(2)} p99` : '   (baseline)'}`,
    );
  console.log(`\n[shell echo of ${others} rollouts, with and without ${readers} rollouts reading ${values.mb} MB through a bridged server]`);
  row('shell echo, no readers', quiet);
  row(`shell echo, ${readers} readers of ${values.mb} MB`, loaded, quiet);
  row(`for scale: one ${values.mb} MB read (cut to the output cap)`, reads);
  console.log(`  event loop held at most: ${loop.quiet.toFixed(0)} ms without readers, ${loop.loaded.toFixed(0)} ms with them`);
} finally {
  await srv.close();
}
