// The OpenEnv door with coding episodes in real sandboxes, on every driver that runs the coding example
// (bwrap and Docker, as test/doors/nemo-gym/coding.test.ts), driven as OpenEnv's MCPToolClient drives a
// server (test/helpers/openenv-client.ts): rewards equal /graders/unit_tests', 50 parallel sessions keep
// their workspaces apart, and an abrupt close lets the command running finish once, recorded.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { randomBytes, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describeIf } from '../../helpers/require.js';
import { repoRoot, startTestServer, type TestServer } from '../../helpers/server.js';
import { driverCases } from '../../helpers/sandboxes.js';
import { EnvClient } from '../../helpers/openenv-client.js';
import { waitFor } from '../../helpers/wait.js';

type Row = Record<string, unknown>;
const rows = readFileSync(join(repoRoot, 'examples/coding/train.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Row);
const itemOf = ({ messages: _m, tools: _t, ...item }: Row): Row => item;
const solution = (task: unknown) => readFileSync(join(repoRoot, `examples/coding/tasks/${String(task)}/solution.patch`), 'utf8');

// OpenEnv's message_timeout_s (60 s by default) is the user's to set: 50 sandboxes starting at once on this shared
// 2-core machine take longer than that.
const TIMEOUT_MS = 300_000;
const drivers = driverCases.filter((c) => c.name !== 'process');
for (const d of drivers) {
  describeIf(d.available, `OpenEnv door, coding on ${d.name}`, d.reason)(`OpenEnv door, coding on ${d.name}`, () => {
    let server: TestServer;
    let base: string;
    beforeAll(async () => {
      server = await startTestServer({ env: { RFT_SANDBOX: d.name, RFT_PRIVATE_PORT: '0', RFT_SQLITE_SYNC: 'normal' } });
      base = `${server.app.rft.privateDoors!.url}/coding`;
    });
    afterAll(() => server?.close());

    const api = async (path: string, body?: unknown) => {
      const res = await fetch(`${server.url}${path}`, {
        method: body === undefined ? 'GET' : 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${server.key}` },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      return (await res.json()) as Record<string, unknown>;
    };
    /** The same calls and answer through Agent RFT's /tools and /graders/unit_tests. */
    const agentRft = async (row: Row, calls: [string, Record<string, unknown>][], answer: string): Promise<number> => {
      const traceId = `trace_${randomUUID()}`;
      for (const [i, [name, args]] of calls.entries()) {
        await api('/tools', { type: 'function_call', call_id: `call_${i}`, name, arguments: JSON.stringify(args), trace_id: traceId, item: itemOf(row) });
      }
      return (await api('/graders/unit_tests', { sample: { output_text: answer, output_tools: [], choices: [] }, item: itemOf(row), trace_id: traceId })).score as number;
    };

    it('episodes get the rewards the same calls and answer get through /tools and /graders/unit_tests', async () => {
      const plans = rows.slice(0, 4).map((row, i) => ({
        index: i,
        row,
        calls: (i % 2 === 0 ? [['apply_patch', { patch: solution(row.task_id) }]] : [['list_files', {}]]) as [string, Record<string, unknown>][],
      }));
      // One at a time: the hidden tests' timeouts must not meet a machine loaded by the others' runs.
      const results: { reward: number | null; expected: number }[] = [];
      for (const { index, row, calls } of plans) {
        results.push(
          await (async () => {
          const env = await new EnvClient(base, TIMEOUT_MS).connect();
          try {
            await env.reset({ split: 'train', index });
            for (const [name, args] of calls) await env.callTool(name, args);
            const done = await env.step({ type: 'call_tool', tool_name: 'submit', arguments: { answer: 'Fixed the bug.' } });
            expect(done.done).toBe(true);
            return { reward: done.reward, expected: await agentRft(row, calls, 'Fixed the bug.') };
          } finally {
            await env.close();
          }
          })(),
        );
      }
      for (const r of results) expect(r.reward).toBe(r.expected);
      expect(results.map((r) => r.reward)).toEqual([1, 0, 1, 0]);
    }, 300_000);

    it('50 parallel sessions keep their workspaces apart: each sees its own secret and none of the others', async () => {
      const secrets = Array.from({ length: 50 }, () => `secret-${randomBytes(12).toString('hex')}`);
      const clients = await Promise.all(secrets.map(() => new EnvClient(base, TIMEOUT_MS).connect()));
      try {
        await Promise.all(clients.map((env, i) => env.reset({ index: i % rows.length })));
        await Promise.all(clients.map((env, i) => env.callTool('write_file', { path: 'mine.txt', content: secrets[i]! })));
        const seen = await Promise.all(
          clients.map((env) => env.callTool('shell', { command: 'cat mine.txt; echo; cat ../*/mine.txt ../../*/*/mine.txt /tmp/*/mine.txt 2>/dev/null | head -50; ls -a .. /tmp 2>&1 | head -50' })),
        );
        for (const [i, out] of seen.entries()) {
          expect(String(out)).toContain(secrets[i]);
          for (const [j, s] of secrets.entries()) if (j !== i) expect(String(out).includes(s), `session ${i} sees session ${j}'s secret`).toBe(false);
        }
      } finally {
        await Promise.all(clients.map((env) => env.close()));
      }
    }, 600_000);

    it('an abrupt close lets the command running finish, once, recorded; the rollout then ends', async () => {
      const env = await new EnvClient(base, TIMEOUT_MS).connect();
      await env.reset({ index: 1 });
      const trace = (await env.state()).trace_id as string;
      await env.send({ type: 'step', data: { type: 'call_tool', tool_name: 'shell', arguments: { command: 'sleep 1; echo run >> runs.txt; wc -l < runs.txt' } } });
      // the connection drops once the shell call is running
      await waitFor('the shell call to start', async () => {
        const rec = await api(`/v1/rollouts/${trace}`);
        return (rec.calls as unknown[]).length > 0 ? true : undefined;
      }, 60_000, 50);
      env.drop();
      const rec = await waitFor('the shell call to finish', async () => {
        const r = await api(`/v1/rollouts/${trace}`);
        const calls = r.calls as { status: string; output: string }[];
        return calls[0]?.status === 'ok' ? calls : undefined;
      }, 60_000);
      expect(rec).toHaveLength(1);
      expect(rec[0]!.output).toMatch(/--- stdout ---\n1\s*$/);
    }, 120_000);
  });
}
