// A bridged server's big answer (issue 26, item 1): a sandboxed MCP server that answers 20 MB in one
// line must not hold up other rollouts' calls, and the model reads the head of its output cut at the
// tool's cap, as it would from a native tool. Before the fix the stdio transport copied and rescanned
// its whole read buffer on every chunk (quadratic work on the event loop): with three such reads,
// another rollout's `shell echo` waited tens of seconds and /healthz seconds.
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeIf } from '../helpers/require.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { driversPresent } from '../sandbox/helpers.js';
import { callTool, getJson, writeMcpJson } from './helpers.js';

const present = await driversPresent();
const FIXTURES = join(import.meta.dirname, 'fixtures');
const BIG = 30_000_000;
/** The tools' output cap (RFT_MAX_OUTPUT_BYTES's default). */
const CAP = 16_384;

for (const driver of ['bwrap', 'docker'] as const) {
  describeIf(present[driver], `MCP big outputs on ${driver}`, `${driver} sandbox driver not available`)(`a bridged server's big answer (${driver})`, () => {
    let srv: TestServer;

    beforeAll(async () => {
      srv = await startTestServer({
        env: {
          RFT_SANDBOX: driver,
          RFT_RATE_LIMIT: '0',
          RFT_TOOL_TIMEOUT_MS: '120000',
          RFT_MCP_CONFIG: writeMcpJson({
            big: { command: 'node', args: [join(FIXTURES, 'big-output-server.mjs')], sandbox: true, mounts: [FIXTURES], prefix: 'big_' },
          }),
        },
      });
    });
    afterAll(async () => {
      await srv?.close();
    });

    const timed = async <T>(f: () => Promise<T>): Promise<[T, number]> => {
      const t0 = performance.now();
      const r = await f();
      return [r, performance.now() - t0];
    };

    it("three rollouts reading 30 MB each hold up neither a fourth rollout's shell calls nor /healthz", { timeout: 240_000 }, async () => {
      const readers = [0, 1, 2].map(() => `trace_${randomUUID()}`);
      const other = `trace_${randomUUID()}`;
      // Sandboxes and instances up first: what is measured is the reading, not the starts.
      await Promise.all([...readers.map((t) => callTool(srv, t, 'big_echo', { message: 'up' })), callTool(srv, other, 'shell', { command: 'echo up' })]);

      // The same calls with no reader first: the bounds below grow with what this machine's load does to them.
      const base = { shell: 0, health: 0 };
      for (let i = 0; i < 5; i++) {
        base.shell = Math.max(base.shell, (await timed(() => callTool(srv, other, 'shell', { command: 'echo hi' })))[1]);
        base.health = Math.max(base.health, (await timed(() => fetch(`${srv.url}/healthz`).then((x) => x.status)))[1]);
      }
      // The server runs in this process: how long its event loop was held at a time.
      const loop = monitorEventLoopDelay({ resolution: 10 });
      loop.enable();
      let reading = true;
      const reads = Promise.all(readers.map((t) => timed(() => callTool(srv, t, 'big_big', { bytes: BIG })))).finally(() => (reading = false));
      const shellTimes: number[] = [];
      const healthTimes: number[] = [];
      const shells = (async () => {
        while (reading) {
          const [r, took] = await timed(() => callTool(srv, other, 'shell', { command: 'echo hi' }));
          expect(r.output).toContain('hi');
          shellTimes.push(took);
        }
      })();
      const health = (async () => {
        while (reading) {
          const [r, took] = await timed(() => fetch(`${srv.url}/healthz`).then((x) => x.status));
          expect(r).toBe(200);
          healthTimes.push(took);
        }
      })();
      const done = await reads;
      await Promise.all([shells, health]);
      loop.disable();

      const max = (xs: number[]) => Math.max(...xs);
      console.log(`${driver}: without readers shell max ${Math.round(base.shell)} ms, /healthz max ${Math.round(base.health)} ms; reads ${done.map(([, t]) => Math.round(t)).join('/')} ms; shell max ${Math.round(max(shellTimes))} ms (n=${shellTimes.length}); /healthz max ${Math.round(max(healthTimes))} ms (n=${healthTimes.length}); event loop held at most ${Math.round(loop.max / 1e6)} ms`);
      // Generous for a loaded 2-core machine (load average 15 here: at most 5 s and 1 s); before the
      // fix, at load 13 with 20 MB reads, shell took up to 10 s (Docker) and 59 s (bubblewrap),
      // /healthz 3.3 and 4.8 s.
      expect(max(shellTimes)).toBeLessThan(12_000 + 3 * base.shell);
      expect(max(healthTimes)).toBeLessThan(2_500 + 3 * base.health);
      for (const [r] of done) {
        expect(r.status).toBe(200);
        expect(r.output.startsWith('AAAA')).toBe(true);
        // The size stated is the answer's whole size: the 30 MB of text and its JSON-RPC envelope.
        const [, size] = /\n\[output truncated: (\d+) bytes, showing the first \d+\]$/.exec(r.output) ?? [];
        expect(Number(size)).toBeGreaterThan(BIG);
        expect(Buffer.byteLength(r.output)).toBeLessThanOrEqual(CAP);
      }
    });

    it("answers an oversize error as the tool's error, cut like any output, and the instance serves the next call", async () => {
      const t = `trace_${randomUUID()}`;
      const r = await callTool(srv, t, 'big_big', { bytes: 3_000_000, error: true });
      expect(r.status).toBe(200);
      expect(r.output).toMatch(/^Error: AAAA+\n\[output truncated: \d+ bytes, showing the first \d+\]$/);
      expect(Buffer.byteLength(r.output)).toBeLessThanOrEqual(CAP);
      expect((await getJson(srv, `/v1/rollouts/${t}`)).calls).toMatchObject([{ tool: 'big_big', status: 'tool_error' }]);
      expect((await callTool(srv, t, 'big_echo', { message: 'still here' })).output).toBe('still here');
      // Under the read limit the ledger cuts it as before, stating the text's own size.
      expect((await callTool(srv, t, 'big_big', { bytes: 200_000 })).output).toMatch(/\n\[output truncated: 200000 bytes, showing the first 16384\]$/);
    });
  });
}
