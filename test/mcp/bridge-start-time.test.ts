// Starting a bridged MCP server's instance is ours, not the tool's (issue 37): 40 OpenEnv episodes
// started together each spent their first call's timeout starting the server and got a timeout
// observation, charged to the model. Now the time a call waits for the instance to start is not
// counted in the tool's timeout (which still bounds the tool's own run), and a start past its own
// bound (the server's `startTimeoutMs`, default RFT_MCP_START_TIMEOUT_MS) answers 503
// RFT_ERR_TOOL_START_TIMEOUT: not recorded, not charged, and the retry of the same call_id runs it.
// The server is a real stdio MCP server held at its start by a gate file (gated-start-server.mjs),
// inside the rollout's bubblewrap sandbox, or on the host with the process driver.
import { randomUUID } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeIf } from '../helpers/require.js';
import { repoRoot, startTestServer, type TestServer } from '../helpers/server.js';
import { driversPresent } from '../sandbox/helpers.js';
import { callTool, getJson, pidsWith, rolloutMarker, until, writeMcpJson } from './helpers.js';

const present = await driversPresent();
const FIXTURES = join(repoRoot, 'test/mcp/fixtures');
/** The tools' timeout: every start below is held longer than this. */
const TOOL_TIMEOUT_MS = 1_000;
/** RFT_MCP_START_TIMEOUT_MS here: the bound of `stuck`, which sets no startTimeoutMs of its own. */
const START_BOUND_MS = 5_000;

interface Rollout {
  calls: { call_id: string; status: string; output: string | null }[];
  budget?: { used: number; limit: number };
}

const MODES = [
  { driver: 'bwrap', sandbox: true },
  { driver: 'process', sandbox: false },
] as const;

for (const mode of MODES) {
  const where = mode.sandbox ? `inside its ${mode.driver} sandbox` : `on the host (${mode.driver} driver)`;
  describeIf(present[mode.driver], `MCP bridge on ${mode.driver}`, `${mode.driver} sandbox driver not available`)(`a bridged server slow to start, ${where}`, () => {
    let srv: TestServer;
    let gate: string;

    beforeAll(async () => {
      gate = mkdtempSync(join(tmpdir(), 'rft-mcp-gate-'));
      chmodSync(gate, 0o755); // read by the sandbox's own uid
      const server = (extra: Record<string, unknown>) => ({
        command: 'node',
        args: [join(FIXTURES, 'gated-start-server.mjs'), gate, rolloutMarker('${RFT_TRACE_ID}')],
        ...(mode.sandbox ? { sandbox: true, mounts: [FIXTURES, gate] } : {}),
        ...extra,
      });
      srv = await startTestServer({
        env: {
          RFT_SANDBOX: mode.driver,
          RFT_TOOL_TIMEOUT_MS: String(TOOL_TIMEOUT_MS),
          RFT_MCP_START_TIMEOUT_MS: String(START_BOUND_MS),
          RFT_MCP_CONFIG: writeMcpJson({
            slow: server({ prefix: 'slow_', tools: ['echo', 'wait'], startTimeoutMs: 120_000 }),
            stuck: server({ prefix: 'stuck_', tools: ['echo'] }),
          }),
        },
      });
    });
    afterAll(async () => {
      await srv?.close();
      rmSync(gate, { recursive: true, force: true });
    });

    const open = (traceId: string) => writeFileSync(join(gate, traceId), '', { mode: 0o644 });
    /** Until the server of each of these rollouts is running (held at its gate). */
    const starting = (...traceIds: string[]) =>
      until(
        async () => {
          for (const t of traceIds) if ((await pidsWith(rolloutMarker(t))).length !== 1) return false;
          return true;
        },
        60_000,
        `the servers of ${traceIds.length} rollout(s) started`,
        200,
      );
    /** The start stays held this long after it began: longer than the tool's timeout. */
    const holdPastTimeout = () => new Promise((r) => setTimeout(r, 2 * TOOL_TIMEOUT_MS + 500));
    const rollout = async (traceId: string) => (await getJson(srv, `/v1/rollouts/${traceId}`)) as unknown as Rollout;

    it("a start longer than the tool's timeout is not counted in it: the call answers the tool's output, charged once; the tool's own run is still timed", { timeout: 60_000 }, async () => {
      const t = `trace_${randomUUID()}`;
      const first = callTool(srv, t, 'slow_echo', { message: 'hello' }, 'call_1', { tool_budget: 3 });
      await starting(t);
      await holdPastTimeout();
      open(t);
      const r = await first;
      expect([r.status, r.output], JSON.stringify(r.body)).toEqual([200, 'hello']);
      // The instance is up: the tool's own run is bounded by its timeout as before.
      const hung = await callTool(srv, t, 'slow_wait', { ms: 20_000 }, 'call_2', { tool_budget: 3 });
      expect([hung.status, hung.output]).toEqual([200, `Error: tool "slow_wait" timed out after ${TOOL_TIMEOUT_MS} ms.`]);
      const rec = await rollout(t);
      expect(rec.calls.map((c) => [c.call_id, c.status])).toEqual([
        ['call_1', 'ok'],
        ['call_2', 'timeout'],
      ]);
      expect(rec.budget).toMatchObject({ used: 2, limit: 3 });
    });

    it('a start past its bound answers 503 RFT_ERR_TOOL_START_TIMEOUT, unrecorded and uncharged; the retry runs the call once the server starts', { timeout: 60_000 }, async () => {
      const t = `trace_${randomUUID()}`;
      const r = await callTool(srv, t, 'stuck_echo', { message: 'once' }, 'call_1', { tool_budget: 1 });
      expect([r.status, (r.body.error as { code?: string } | undefined)?.code], JSON.stringify(r.body)).toEqual([503, 'RFT_ERR_TOOL_START_TIMEOUT']);
      expect(r.body.error).toMatchObject({ details: { bound_ms: START_BOUND_MS } });
      const rec = await rollout(t);
      expect(rec.calls).toEqual([]);
      expect(rec.budget?.used ?? 0).toBe(0);
      // The instance that did not start in time was stopped.
      await until(async () => (await pidsWith(rolloutMarker(t))).length === 0, 20_000, 'the stuck instance stopped');

      open(t);
      // A budget of 1: had the failed attempt been charged, the retry would find none left. (The
      // trainer retries a 503: so does this, should a loaded host start the server past its bound again.)
      let retry = await callTool(srv, t, 'stuck_echo', { message: 'once' }, 'call_1', { tool_budget: 1 });
      for (let i = 0; i < 2 && retry.status === 503; i++) retry = await callTool(srv, t, 'stuck_echo', { message: 'once' }, 'call_1', { tool_budget: 1 });
      expect([retry.status, retry.output], JSON.stringify(retry.body)).toEqual([200, 'once']);
      const again = await callTool(srv, t, 'stuck_echo', { message: 'once' }, 'call_1', { tool_budget: 1 });
      expect([again.status, again.output]).toEqual([200, 'once']);
      const after = await rollout(t);
      expect(after.calls.map((c) => [c.call_id, c.status, c.output])).toEqual([['call_1', 'ok', 'once']]);
      expect(after.budget).toMatchObject({ used: 1, limit: 1 });
    });

    it('a burst of 10 rollouts whose first calls all wait on slow starts: none comes back as a timeout', { timeout: 120_000 }, async () => {
      const traces = Array.from({ length: 10 }, () => `trace_${randomUUID()}`);
      const calls = traces.map((t, i) => callTool(srv, t, 'slow_echo', { message: `r${i}` }, 'call_1', { tool_budget: 1 }));
      await starting(...traces);
      await holdPastTimeout();
      for (const t of traces) open(t);
      const replies = await Promise.all(calls);
      expect(replies.map((r) => [r.status, r.output])).toEqual(traces.map((_, i) => [200, `r${i}`]));
      for (const t of traces) expect((await rollout(t)).calls.map((c) => c.status)).toEqual(['ok']);
    });
  });
}
