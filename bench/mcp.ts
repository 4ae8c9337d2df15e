// MCP costs, through the same pipeline as every tool call (POST /tools: auth, ledger, record):
// - a bridged call (server-everything's `echo`, one shared instance) against a native no-op tool;
// - a per-rollout instance inside the rollout's sandbox: the rollout's first call (sandbox created,
//   server started, MCP handshake) against its later calls; the same for an instance on the host;
// - /mcp serving: the SDK's client calling the native no-op over Streamable HTTP against POST /tools.
// Calls run one at a time, the kinds interleaved so a busy machine weighs on all alike.
// With --seeded, only this instead: rollouts announced through the NeMo Gym door's /seed_session (the
// sandbox, and the rollout instance with it, started ahead), the first bridged call after a think
// time of each --think-ms against the rollout's later calls (issue 24: the first at most 3x a later one).
// With --pooled, only this instead: new rollouts through POST /tools, which announces nothing (Agent
// RFT), one at a time, each first calling the sandboxed echo after a think time of each --think-ms: the
// warm pool's sandboxes have started the server (SandboxSpec.prestarts), so the first call adopts it
// (issue 24: the first at most 3x a later one when the pool is warm).
// Run: node --import tsx bench/mcp.ts [--driver bwrap|docker] [--calls 300] [--rollouts 30] [--seeded|--pooled [--think-ms 0,2000]]
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { request } from 'undici';
import { repoRoot, startTestServer, type TestServer } from '../test/helpers/server.js';
import { NODE_MODULES, serverEntry, writeMcpJson } from '../test/mcp/helpers.js';
import { postOnce, type Cookies } from '../test/helpers/nemo-gym-client.js';
import { SESSION_COOKIE } from '../src/doors/nemo-gym/app.js';
import { traceIdOf } from '../src/doors/nemo-gym/sessions.js';

const { values } = parseArgs({
  options: {
    driver: { type: 'string', default: 'bwrap' },
    calls: { type: 'string', default: '300' },
    rollouts: { type: 'string', default: '30' },
    seeded: { type: 'boolean', default: false },
    pooled: { type: 'boolean', default: false },
    'think-ms': { type: 'string', default: '0,2000' },
  },
});
const driver = values.driver as 'bwrap' | 'docker';
const calls = Number(values.calls);
const rollouts = Number(values.rollouts);

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN;
}
const ms = (x: number): string => `${x.toFixed(2).padStart(8)} ms`;

interface Row {
  label: string;
  xs: number[];
  base?: number[];
}

function table(title: string, rows: Row[]): void {
  console.log(`\n${title}`);
  console.log(`  ${'call'.padEnd(56)} ${'p50'.padStart(11)} ${'p99'.padStart(11)}   vs baseline p50   p99`);
  for (const r of rows) {
    const ratio = r.base ? `   x${(pct(r.xs, 50) / pct(r.base, 50)).toFixed(2).padStart(7)}   x${(pct(r.xs, 99) / pct(r.base, 99)).toFixed(2)}` : '   (baseline)';
    console.log(`  ${`${r.label} (n=${r.xs.length})`.padEnd(56)} ${ms(pct(r.xs, 50))} ${ms(pct(r.xs, 99))}${ratio}`);
  }
}

async function call(srv: TestServer, traceId: string, name: string, args: unknown): Promise<number> {
  const t0 = performance.now();
  const res = await request(`${srv.url}/tools`, {
    method: 'POST',
    headers: { authorization: `Bearer ${srv.key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ type: 'function_call', call_id: `c_${randomUUID()}`, name, arguments: JSON.stringify(args), trace_id: traceId, item: {} }),
  });
  const body = (await res.body.json()) as { output?: string };
  const took = performance.now() - t0;
  if (res.statusCode !== 200 || (body.output ?? '').startsWith('Error')) throw new Error(`${name}: ${res.statusCode} ${JSON.stringify(body).slice(0, 300)}`);
  return took;
}

function timeProcess(cmd: string, args: string[]): Promise<number> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const c = spawn(cmd, args, { stdio: 'ignore' });
    c.on('error', reject);
    c.on('close', () => resolve(performance.now() - t0));
  });
}

async function endRollout(srv: TestServer, traceId: string): Promise<void> {
  const res = await request(`${srv.url}/v1/rollouts/${traceId}`, { method: 'DELETE', headers: { authorization: `Bearer ${srv.key}` } });
  await res.body.text();
}

/**
 * Rollouts seeded through the NeMo Gym door (a row offering the sandboxed echo, with a sandbox): after
 * `thinkMs`, the first call, then 10 later ones, one rollout at a time.
 */
async function seeded(srv: TestServer, thinkMs: number): Promise<{ first: number[]; later: number[] }> {
  const door = srv.app.rft.nemoGym!.url;
  const row = { responses_create_params: { input: [{ role: 'user', content: 'echo' }], tools: [{ type: 'function', name: 'sb_echo', parameters: { type: 'object', properties: {} } }] }, sandbox: {} };
  const gymCall = async (cookies: Cookies, message: string): Promise<number> => {
    const t0 = performance.now();
    const r = await postOnce(door, '/sb_echo', { message }, { cookies });
    const took = performance.now() - t0;
    if (r.status !== 200 || !r.text.includes(message)) throw new Error(`sb_echo: ${r.status} ${r.text.slice(0, 300)}`);
    return took;
  };
  const first: number[] = [];
  const later: number[] = [];
  for (let r = 0; r < rollouts; r++) {
    const seed = await postOnce(door, '/seed_session', row);
    if (seed.status !== 200) throw new Error(`seed_session: ${seed.status} ${seed.text.slice(0, 300)}`);
    if (thinkMs > 0) await new Promise((resolve) => setTimeout(resolve, thinkMs));
    first.push(await gymCall(seed.cookies, 'first'));
    for (let i = 0; i < 10; i++) later.push(await gymCall(seed.cookies, 'later'));
    await endRollout(srv, traceIdOf(seed.cookies[SESSION_COOKIE]!));
  }
  return { first, later };
}

/**
 * New rollouts through POST /tools, one at a time: after `thinkMs`, the first call to the sandboxed
 * echo, then 10 later ones; and how many first calls adopted a server the pool had started.
 */
async function pooled(srv: TestServer, thinkMs: number): Promise<{ first: number[]; later: number[]; adopted: number; nativeFirst: number[]; nativeLater: number[] }> {
  const prestarted = async () => {
    const res = await request(`${srv.url}/readyz`);
    return ((await res.body.json()) as { mcp: { prestarted: number } }).mcp.prestarted;
  };
  const before = await prestarted();
  const first: number[] = [];
  const later: number[] = [];
  // For scale: a rollout whose calls are a native tool that only takes the sandbox (its first call
  // pays for the sandbox's hand-over and the rollout's first records, as the bridged one does).
  const nativeFirst: number[] = [];
  const nativeLater: number[] = [];
  const rollout = async (tool: string, firsts: number[], laters: number[]): Promise<void> => {
    const trace = `trace_pooled_${randomUUID()}`;
    if (thinkMs > 0) await new Promise((resolve) => setTimeout(resolve, thinkMs));
    firsts.push(await call(srv, trace, tool, { message: 'first' }));
    for (let i = 0; i < 10; i++) laters.push(await call(srv, trace, tool, { message: 'later' }));
    await endRollout(srv, trace);
  };
  for (let r = 0; r < rollouts; r++) {
    await rollout('sb_echo', first, later);
    await rollout('sandbox_noop', nativeFirst, nativeLater);
  }
  return { first, later, adopted: (await prestarted()) - before, nativeFirst, nativeLater };
}

const echo = { command: 'node', args: [serverEntry('server-everything')], tools: ['echo'] };
// The door's rows need no environment: none is loaded for --seeded.
const noEnvironments = values.seeded ? mkdtempSync(join(tmpdir(), 'rft-bench-no-env-')) : undefined;
const srv = await startTestServer({
  toolsDir: join(repoRoot, 'bench/units/tools'),
  env: {
    ...(noEnvironments ? { RFT_NEMO_GYM_PORT: '0', RFT_ENVIRONMENTS: noEnvironments } : {}),
    RFT_SANDBOX: driver,
    RFT_RATE_LIMIT: '0',
    RFT_MCP_CONFIG: writeMcpJson({
      shared: { ...echo, scope: 'shared', prefix: 'shared_' },
      sandboxed: { ...echo, sandbox: true, mounts: [NODE_MODULES], prefix: 'sb_' },
      host: { ...echo, prefix: 'host_' },
    }),
  },
});
console.log(`MCP bench: driver ${driver}, ${calls} calls per kind, ${rollouts} rollouts per instance kind; node ${process.version}`);
try {
  if (values.seeded) {
    for (const thinkMs of values['think-ms'].split(',').map(Number)) {
      const { first, later } = await seeded(srv, thinkMs);
      table(`[rollout seeded through NeMo Gym's /seed_session, instance in its ${driver} sandbox: first call ${thinkMs} ms after the seed vs later calls]`, [
        { label: 'later calls of the rollout', xs: later },
        { label: "rollout's first call", xs: first, base: later },
      ]);
    }
  } else if (values.pooled) {
    for (const thinkMs of values['think-ms'].split(',').map(Number)) {
      const { first, later, adopted, nativeFirst, nativeLater } = await pooled(srv, thinkMs);
      table(`[new rollout through POST /tools, instance in its ${driver} sandbox: first call ${thinkMs} ms after the previous rollout vs later calls; ${adopted} of ${first.length} first calls adopted a server the warm pool started]`, [
        { label: 'later calls of the rollout', xs: later },
        { label: "rollout's first call", xs: first, base: later },
      ]);
      table(`[for scale, the same with a native tool that only takes the sandbox]`, [
        { label: 'later calls of the rollout', xs: nativeLater },
        { label: "rollout's first call", xs: nativeFirst, base: nativeLater },
      ]);
    }
  } else {
    await everything(srv);
  }
} finally {
  await srv.close();
  if (noEnvironments) rmSync(noEnvironments, { recursive: true, force: true });
}

async function everything(srv: TestServer): Promise<void> {
  const mcpClient = new Client({ name: 'bench', version: '1' }, { versionNegotiation: { mode: 'auto' } });
  const warmTrace = `trace_warm_${randomUUID()}`;
  await mcpClient.connect(new StreamableHTTPClientTransport(new URL(`${srv.url}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${srv.key}`, 'x-rft-trace-id': warmTrace } } }));
  const viaMcp = async (): Promise<number> => {
    const t0 = performance.now();
    await mcpClient.callTool({ name: 'noop', arguments: {} });
    return performance.now() - t0;
  };

  // Warm everything once (JIT, connections, the rollout's instance).
  for (let i = 0; i < 20; i++) {
    await call(srv, warmTrace, 'noop', {});
    await call(srv, warmTrace, 'shared_echo', { message: 'x' });
    await call(srv, warmTrace, 'sb_echo', { message: 'x' });
    await viaMcp();
  }

  const native: number[] = [];
  const shared: number[] = [];
  const sandboxedLater: number[] = [];
  const served: number[] = [];
  const kinds: [number[], () => Promise<number>][] = [
    [native, () => call(srv, warmTrace, 'noop', {})],
    [shared, () => call(srv, warmTrace, 'shared_echo', { message: 'x' })],
    [sandboxedLater, () => call(srv, warmTrace, 'sb_echo', { message: 'x' })],
    [served, viaMcp],
  ];
  for (let i = 0; i < calls; i++) {
    // Each kind takes each place in the order in turn: what the previous call leaves behind weighs on all alike.
    for (let k = 0; k < kinds.length; k++) {
      const [xs, run] = kinds[(i + k) % kinds.length]!;
      xs.push(await run());
    }
  }
  await mcpClient.close();

  table('[bridged call vs native no-op, through POST /tools]', [
    { label: 'native no-op tool', xs: native },
    { label: 'bridged echo, shared instance (stdio, host)', xs: shared, base: native },
    { label: `bridged echo, rollout instance in its ${driver} sandbox`, xs: sandboxedLater, base: native },
  ]);
  table('[serving: the native no-op called by the SDK client over /mcp]', [
    { label: 'POST /tools', xs: native },
    { label: 'tools/call over /mcp (2026-07-28, no session)', xs: served, base: native },
  ]);

  // What Node itself costs to start on this machine now: a floor under any stdio server's start.
  const nodeStart: number[] = [];
  for (let r = 0; r < rollouts; r++) nodeStart.push(await timeProcess(process.execPath, ['-e', '0']));
  for (const kind of ['sb', 'host'] as const) {
    const first: number[] = [];
    const later: number[] = [];
    for (let r = 0; r < rollouts; r++) {
      const trace = `trace_${kind}_${randomUUID()}`;
      first.push(await call(srv, trace, `${kind}_echo`, { message: 'first' }));
      for (let i = 0; i < 10; i++) later.push(await call(srv, trace, `${kind}_echo`, { message: 'later' }));
      await endRollout(srv, trace);
    }
    const where = kind === 'sb' ? `inside the rollout's ${driver} sandbox` : `on the host (sandbox false; the ${driver} sandbox still created)`;
    table(`[per-rollout instance ${where}: first call vs later calls]`, [
      { label: 'later calls of the rollout', xs: later },
      { label: "rollout's first call (sandbox + server start + handshake)", xs: first, base: later },
      { label: 'for scale: `node -e 0` on the host', xs: nodeStart, base: later },
    ]);
  }
}
