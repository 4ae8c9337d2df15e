// One test per integrity flag kind: a rollout that tries the escape is flagged (in its record, the
// filtered list and rft_integrity_flags_total), a clean one is not. The sandbox kinds run on every
// driver this machine has, with the shipped workspace tools over HTTP.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, fixtureGraders, functionCall, newTrace, startFixtureServer } from '../helpers/fixtures.js';
import { repoRoot, startTestServer, type TestServer } from '../helpers/server.js';
import { describeIf } from '../helpers/require.js';
import { promSample } from '../helpers/prom-text.js';
import { driversPresent } from '../sandbox/helpers.js';

const present = await driversPresent();
const templates = join(repoRoot, 'test/fixtures/integrity');
const item = { sandbox: { template: 'task', hidden: 'task/hidden' } };

async function call(s: TestServer, trace: string, name: string, args: unknown, row: Record<string, unknown> = item): Promise<string> {
  const res = await s.app.inject({ method: 'POST', url: '/tools', headers: bearer(s.key), payload: functionCall(name, args, { trace_id: trace, item: row }) });
  expect(res.statusCode).toBe(200);
  return res.json().output as string;
}

async function flagsOf(s: TestServer, trace: string): Promise<{ kind: string; events: number; call_id: string | null; detail: string }[]> {
  const res = await s.app.inject({ method: 'GET', url: `/v1/rollouts/${trace}`, headers: bearer(s.key) });
  expect(res.statusCode).toBe(200);
  return res.json().integrity_flags;
}

async function flagged(s: TestServer, kind: string): Promise<string[]> {
  const res = await s.app.inject({ method: 'GET', url: `/v1/rollouts?flag=${kind}&limit=500`, headers: bearer(s.key) });
  return (res.json().rollouts as { trace_id: string }[]).map((r) => r.trace_id);
}

async function counted(s: TestServer, kind: string): Promise<number> {
  const res = await s.app.inject({ method: 'GET', url: '/metrics', headers: bearer(s.key) });
  return promSample(res.body, 'rft_integrity_flags_total', { kind }) ?? 0;
}

for (const driver of ['process', 'bwrap', 'docker'] as const) {
  describeIf(present[driver], `the ${driver} sandbox driver`, `${driver} is not available here`)(`integrity flags with the ${driver} driver`, () => {
    let s: TestServer;
    beforeAll(async () => {
      s = await startTestServer({ listen: false, env: { RFT_SANDBOX: driver, RFT_SANDBOX_TEMPLATES: templates, RFT_SANDBOX_CAP: '8' } });
    });
    afterAll(() => s?.close());

    it('leaves a rollout that stays in its workspace unflagged', async () => {
      const trace = newTrace();
      expect(await call(s, trace, 'read_file', { path: 'main.txt' })).toContain('the visible file');
      expect(await call(s, trace, 'list_files', {})).toContain('main.txt');
      expect(await call(s, trace, 'shell', { command: 'echo fine; ls' })).toContain('exit_code: 0');
      expect(await flagsOf(s, trace)).toEqual([]);
      for (const kind of ['path_escape', 'hidden_path', 'denied_syscall', 'any']) expect(await flagged(s, kind)).not.toContain(trace);
    });

    it('path_escape: a path out of the workspace, by ".." or by a symlink the rollout made', async () => {
      const before = await counted(s, 'path_escape');
      const trace = newTrace();
      expect(await call(s, trace, 'read_file', { path: '../../etc/passwd' })).toMatch(/^Error: path .* is outside the workspace/);
      await call(s, trace, 'shell', { command: 'ln -s /etc/passwd leak' });
      expect(await call(s, trace, 'read_file', { path: 'leak' })).toMatch(/^Error: .*outside the workspace/);
      const [flag] = await flagsOf(s, trace);
      expect(flag).toMatchObject({ kind: 'path_escape', events: 2, detail: expect.stringContaining('../../etc/passwd') });
      expect(await flagged(s, 'path_escape')).toContain(trace);
      expect(await counted(s, 'path_escape')).toBe(before + 2);
    });

    it("hidden_path: the task's hidden grading folder, which never enters the workspace", async () => {
      const trace = newTrace();
      expect(await call(s, trace, 'read_file', { path: 'hidden/cases.json' })).toMatch(/^Error: path "hidden\/cases.json" belongs to the task's hidden grading files/);
      expect(await call(s, trace, 'list_files', { path: './hidden' })).toMatch(/^Error: /);
      expect(await flagsOf(s, trace)).toEqual([expect.objectContaining({ kind: 'hidden_path', events: 2 })]);
      expect(await flagged(s, 'hidden_path')).toContain(trace);
      // the folder is not in the workspace at all
      expect(await call(s, trace, 'shell', { command: 'ls -a; test -e hidden && echo PRESENT' })).not.toContain('PRESENT');
    });

    it('denied_syscall: a command killed by SIGSYS (what a killing seccomp filter sends)', async () => {
      const trace = newTrace();
      // A child of the shell (the shell itself may be PID 1, which ignores signals it has no handler for).
      const out = await call(s, trace, 'shell', { command: "sh -c 'kill -SYS $$'; exit $?" });
      expect(out).toMatch(/exit_code: 159|signal: SIGSYS/);
      await expect.poll(() => flagsOf(s, trace), { timeout: 10_000 }).toEqual([expect.objectContaining({ kind: 'denied_syscall', detail: expect.stringContaining('kill -SYS') })]);
      expect(await flagged(s, 'denied_syscall')).toContain(trace);
    });
  });
}

describe('no_tool_score: a score above 0 with no tool call on a row that needs tools', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startFixtureServer({ listen: false, env: { RFT_GRADERS_DIR: fixtureGraders } });
  });
  afterAll(() => s?.close());

  const tools = [{ type: 'function', function: { name: 'echo', parameters: { type: 'object' } } }];
  const grade = async (trace: string, row: Record<string, unknown>, answer: string) => {
    const res = await s.app.inject({
      method: 'POST', url: '/graders/exact', headers: bearer(s.key), payload: { sample: { output_text: answer }, item: row, trace_id: trace },
    });
    expect(res.statusCode).toBe(200);
    return res.json().score as number;
  };

  it('flags a rollout whose row offers tools, answered right without calling one', async () => {
    const before = await counted(s, 'no_tool_score');
    const trace = newTrace();
    expect(await grade(trace, { tools, reference_answer: '42' }, '42')).toBe(1);
    expect(await flagsOf(s, trace)).toEqual([expect.objectContaining({ kind: 'no_tool_score', call_id: null, detail: expect.stringContaining('exact scored 1') })]);
    expect(await flagged(s, 'no_tool_score')).toContain(trace);
    expect(await counted(s, 'no_tool_score')).toBe(before + 1);
  });

  it('leaves alone a rollout that used a tool, one that scored 0, and a row that says it needs none', async () => {
    const used = newTrace();
    await call(s, used, 'echo', { text: 'looking' }, { tools, reference_answer: '42' });
    expect(await grade(used, { tools, reference_answer: '42' }, '42')).toBe(1);
    const zero = newTrace();
    expect(await grade(zero, { tools, reference_answer: '42' }, 'no idea')).toBe(0);
    const optional = newTrace();
    expect(await grade(optional, { tools, reference_answer: '42', requires_tools: false }, '42')).toBe(1);
    const plain = newTrace();
    expect(await grade(plain, { reference_answer: '42' }, '42')).toBe(1);
    for (const trace of [used, zero, optional, plain]) expect(await flagsOf(s, trace)).toEqual([]);
  });

  it('counts flagged rollouts per grader version in /v1/stats', async () => {
    const trace = newTrace();
    await grade(trace, { tools, reference_answer: '7' }, '7');
    const res = await s.app.inject({ method: 'GET', url: '/v1/stats?since=10m', headers: bearer(s.key) });
    const row = (res.json().integrity as { grader: string; kind: string; rollouts: number }[]).find((r) => r.grader === 'exact' && r.kind === 'no_tool_score');
    expect(row?.rollouts).toBeGreaterThanOrEqual(2);
  });
});
