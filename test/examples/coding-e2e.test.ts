// A scripted coding rollout over real HTTP against the real server: plain function_call requests
// with one trace_id, exactly what the trainer sends, then the trainer's grader call.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describeIf } from '../helpers/require.js';
import { repoRoot, startTestServer, type TestServer } from '../helpers/server.js';
import { driverCases } from '../helpers/sandboxes.js';

const rows = readFileSync(join(repoRoot, 'examples/coding/train.jsonl'), 'utf8')
  .trim()
  .split('\n')
  .map((l) => JSON.parse(l) as { task_id: string } & Record<string, unknown>);
const row = (id: string) => rows.find((r) => r.task_id === id) as Record<string, unknown>;

for (const d of driverCases.filter((c) => c.name !== 'process')) {
  describeIf(d.available, `coding rollout over HTTP on ${d.name}`, d.reason)(`coding rollout over HTTP on ${d.name}`, () => {
    let server: TestServer;
    beforeAll(async () => {
      server = await startTestServer({ env: { RFT_SANDBOX: d.name } });
    });
    afterAll(() => server?.close());

    async function post(path: string, body: unknown): Promise<{ status: number; json: Record<string, unknown> }> {
      const res = await fetch(`${server.url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${server.key}` },
        body: JSON.stringify(body),
      });
      return { status: res.status, json: (await res.json()) as Record<string, unknown> };
    }

    /** One tool call as the trainer sends it; returns the output string the model would read. */
    async function call(traceId: string, item: unknown, name: string, args: unknown): Promise<string> {
      const callId = `call_${randomUUID().slice(0, 8)}`;
      const r = await post('/tools', { type: 'function_call', id: `fc_${callId}`, call_id: callId, name, arguments: JSON.stringify(args), trace_id: traceId, item });
      expect(r.status).toBe(200);
      expect(r.json.call_id).toBe(callId);
      return r.json.output as string;
    }

    const gradeRollout = (traceId: string, item: unknown) =>
      post('/graders/unit_tests', { sample: { output_text: 'Fixed the bug.', output_tools: [], choices: [] }, item, trace_id: traceId });

    it('a rollout that fixes the task through apply_patch and shell scores 1.0', async () => {
      const traceId = `trace_${randomUUID()}`;
      const item = row('roman');
      expect(await call(traceId, item, 'list_files', {})).toContain('roman.py');
      expect(await call(traceId, item, 'read_file', { path: 'roman.py', start_line: 1, end_line: 3 })).toBe('1\t"""Roman numeral conversion."""\n2\t\n3\t_VALUES = [');
      expect(await call(traceId, item, 'shell', { command: 'python3 -m unittest discover -s tests' })).toMatch(/^exit_code: 1/);
      const patch = readFileSync(join(repoRoot, 'examples/coding/tasks/roman/solution.patch'), 'utf8');
      expect(await call(traceId, item, 'apply_patch', { patch })).toBe('Success. Updated the following files:\nM roman.py');
      expect(await call(traceId, item, 'shell', { command: 'python3 -m unittest discover -s tests' })).toMatch(/^exit_code: 0/);

      const g = await gradeRollout(traceId, item);
      expect(g).toEqual({ status: 200, json: { score: 1 } });
    }, 120_000);

    it('a failed patch is an observation for the model, not an HTTP error', async () => {
      const traceId = `trace_${randomUUID()}`;
      const out = await call(traceId, row('stats'), 'apply_patch', { patch: '*** Begin Patch\n*** Update File: stats.py\n@@\n-no such line\n+x\n*** End Patch' });
      expect(out).toMatch(/^Error: stats\.py: hunk 1: /);
    }, 60_000);

    it('an untouched rollout scores between 0 and 1 in fraction mode', async () => {
      const traceId = `trace_${randomUUID()}`;
      const item = { ...row('intervals'), unit_tests: { ...(row('intervals').unit_tests as object), mode: 'fraction' } };
      await call(traceId, item, 'list_files', {});
      const g = await gradeRollout(traceId, item);
      expect(g.status).toBe(200);
      expect(g.json.score).toBeGreaterThan(0);
      expect(g.json.score).toBeLessThan(1);
    }, 120_000);

    it('an untouched rollout scores 0 with the shipped rows (improvement mode)', async () => {
      const traceId = `trace_${randomUUID()}`;
      const item = row('intervals');
      await call(traceId, item, 'list_files', {});
      const g = await gradeRollout(traceId, item);
      expect(g).toEqual({ status: 200, json: { score: 0 } });
    }, 120_000);
  });
}
