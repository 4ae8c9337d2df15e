// The NeMo Gym door with coding rollouts in real sandboxes, on every driver that runs the coding
// example (as test/examples/coding-e2e.test.ts: bwrap and Docker), driven as simple_agent drives it.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describeIf } from '../../helpers/require.js';
import { authedPost, repoRoot, startTestServer, type TestServer } from '../../helpers/server.js';
import { driverCases } from '../../helpers/sandboxes.js';
import { gymRequest, postOnce, simpleAgentRun, type FunctionCall, type ModelTurn } from '../../helpers/nemo-gym-client.js';
import { toGymRow } from '../../../src/cli/dataset/nemo-gym-row.js';
import { SESSION_COOKIE } from '../../../src/doors/nemo-gym/app.js';
import { traceIdOf } from '../../../src/doors/nemo-gym/sessions.js';

type Row = Record<string, unknown>;
const rows = readFileSync(join(repoRoot, 'examples/coding/train.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Row);
const itemOf = ({ messages: _m, tools: _t, ...item }: Row): Row => item;
const solution = (task: unknown) => readFileSync(join(repoRoot, `examples/coding/tasks/${String(task)}/solution.patch`), 'utf8');

const drivers = driverCases.filter((c) => c.name !== 'process');
for (const [index, d] of drivers.entries()) {
  describeIf(d.available, `NeMo Gym door, coding on ${d.name}`, d.reason)(`NeMo Gym door, coding on ${d.name}`, () => {
    let server: TestServer;
    let door: string;
    beforeAll(async () => {
      server = await startTestServer({ env: { RFT_SANDBOX: d.name, RFT_NEMO_GYM_PORT: '0', RFT_SQLITE_SYNC: 'normal' } });
      door = server.app.rft.nemoGym!.url;
    });
    afterAll(() => server?.close());

    const post = (path: string, body: unknown) => authedPost<Record<string, unknown>>(server, path, body);
    /** The same calls and answer through Agent RFT's /tools and /graders/unit_tests. */
    const agentRft = async (row: Row, calls: FunctionCall[], answer: string): Promise<number> => {
      const traceId = `trace_${randomUUID()}`;
      for (const [i, c] of calls.entries()) {
        const r = await post('/tools', { type: 'function_call', call_id: `call_${i}`, name: c.name, arguments: c.arguments, trace_id: traceId, item: itemOf(row) });
        expect(r.status).toBe(200);
      }
      const g = await post('/graders/unit_tests', { sample: { output_text: answer, output_tools: [], choices: [] }, item: itemOf(row), trace_id: traceId });
      expect(g.status).toBe(200);
      return g.json.score as number;
    };

    // 20 rollouts on the first driver only: the grader runs hidden tests in a fresh sandbox for each
    // (40 with Agent RFT's), which the other drivers' suites need not repeat to show the door's part.
    it.runIf(index === 0)('20 rollouts get the rewards the same calls and answers get through /tools and /graders/unit_tests', async () => {
      const plans = Array.from({ length: 20 }, (_, i) => {
        const row = rows[i % rows.length]!;
        const calls: FunctionCall[] = i % 2 === 0 ? [{ name: 'apply_patch', arguments: JSON.stringify({ patch: solution(row.task_id) }) }] : [{ name: 'list_files', arguments: '{}' }];
        return { row, calls };
      });
      const results: { reward: number; expected: number }[] = [];
      for (let batch = 0; batch < plans.length; batch += 4) {
        await Promise.all(
          plans.slice(batch, batch + 4).map(async ({ row, calls }) => {
            const model = (step: number): ModelTurn => (step === 1 ? { calls } : { message: 'Fixed the bug.' });
            const ep = await simpleAgentRun(door, toGymRow(row), model);
            expect(ep.verify.status).toBe(200);
            const components = Object.values(ep.result!.reward_components as Record<string, number>);
            expect(components.reduce((s, v) => s + v, 0)).toBe(ep.result!.reward);
            results.push({ reward: ep.result!.reward as number, expected: await agentRft(row, calls, 'Fixed the bug.') });
          }),
        );
      }
      for (const r of results) expect(r.reward).toBe(r.expected);
      expect(results.filter((r) => r.reward === 1).length).toBe(10);
    }, 600_000);

    it('two concurrent rollouts of one task never see each other\'s workspace', async () => {
      const row = toGymRow(rows[0]!);
      const [a, b] = await Promise.all([postOnce(door, '/seed_session', row), postOnce(door, '/seed_session', row)]);
      const write = (s: typeof a, text: string) => postOnce(door, '/write_file', { path: 'mine.txt', content: text }, { cookies: s.cookies });
      await Promise.all([write(a, 'from A'), write(b, 'from B')]);
      const [ra, rb] = await Promise.all(
        [a, b].map((s) => postOnce(door, '/shell', { command: 'cat mine.txt; ls -a; ls -a .. 2>&1 | head -50' }, { cookies: s.cookies })),
      );
      expect(ra!.text).toContain('from A');
      expect(ra!.text).not.toContain('from B');
      expect(rb!.text).toContain('from B');
      expect(rb!.text).not.toContain('from A');
    }, 120_000);

    it("a file written over the door's /mcp is in the sandbox of the session's HTTP calls, and no other", async () => {
      const row = toGymRow(rows[2]!);
      const [a, b] = await Promise.all([postOnce(door, '/seed_session', row), postOnce(door, '/seed_session', row)]);
      const client = new Client({ name: 'gym-mcp-coding', version: '1' }, { versionNegotiation: { mode: 'legacy' } });
      const headers = (JSON.parse(a.text) as { mcp: { headers: Record<string, string> } }).mcp.headers;
      await client.connect(new StreamableHTTPClientTransport(new URL(`${door}/mcp`), { requestInit: { headers } }));
      try {
        const w = await client.callTool({ name: 'write_file', arguments: { path: 'over-mcp.txt', content: 'written over MCP' } });
        expect(w.isError).toBe(false);
        const mine = await postOnce(door, '/shell', { command: 'cat over-mcp.txt' }, { cookies: a.cookies });
        expect(mine.text).toContain('written over MCP');
        const theirs = await postOnce(door, '/shell', { command: 'cat over-mcp.txt 2>&1; true' }, { cookies: b.cookies });
        expect(theirs.text).not.toContain('written over MCP');
        const back = await client.callTool({ name: 'shell', arguments: { command: 'cat over-mcp.txt' } });
        expect(JSON.stringify(back.content)).toContain('written over MCP');
      } finally {
        await client.close();
      }
    }, 120_000);

    it('a transport retry of a running command runs it once', async () => {
      const seed = await postOnce(door, '/seed_session', toGymRow(rows[1]!));
      const cookies = seed.cookies;
      const command = { command: 'sleep 1; echo run >> runs.txt; wc -l < runs.txt' };
      let cuts = 0;
      // The connection is cut while the command runs; Gym's client sends the same bytes again 0.5 s later.
      const reply = await gymRequest(door, '/shell', command, { cookies, onSent: (req) => (cuts++, req.destroy()) });
      expect(cuts).toBe(1);
      expect(reply.status).toBe(200);
      const count = await postOnce(door, '/shell', { command: 'wc -l < runs.txt' }, { cookies });
      expect(count.text.trim().split('\n').at(-1)?.trim()).toBe('1');
      const rec = await fetch(`${server.url}/v1/rollouts/${traceIdOf(cookies[SESSION_COOKIE]!)}`, { headers: { authorization: `Bearer ${server.key}` } });
      expect(((await rec.json()) as { calls: unknown[] }).calls).toHaveLength(2);
    }, 120_000);
  });
}
