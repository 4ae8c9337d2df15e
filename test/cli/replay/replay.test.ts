import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RolloutResult } from '../../../src/cli/rollout/run.js';
import type { RolloutJson } from '../../../src/cli/replay/source.js';
import { startScriptedModel, type ScriptedModel } from '../../helpers/scripted-model.js';
import { startTestServer, type TestServer } from '../../helpers/server.js';
import { finqaScript, finqaToolsDir, getJson, prepareFinqa, readJsonl, reexport, removeTempDirs, repoRoot, runCli, unitsDir } from '../harness.js';

const src = (p: string) => JSON.stringify(join(repoRoot, p));

// read_doc with every digit of the page turned into 7: the same calls now answer differently.
const TAMPERED_READ_DOC = `import base from ${src('tools/read_doc.ts')};
import { defineTool } from ${src('src/index.ts')};
export default defineTool({ ...base, async handler(args, ctx) {
  const out = await base.handler(args, ctx);
  return { ...out, text: String(out.text).replace(/[0-9]/g, '7') };
} });
`;

// A tool whose output carries a fresh time and uuid on every call.
const CLOCK = `import base from ${src('tools/list_docs.ts')};
import { defineTool } from ${src('src/index.ts')};
import { randomUUID } from 'node:crypto';
export default defineTool({ ...base, name: 'clock', description: 'now', handler: () => 'now ' + new Date().toISOString() + ' request ' + randomUUID() });
`;

let a: TestServer;
let tampered: TestServer;
let model: ScriptedModel;
let work: string;
let traceId: string;

const auth = (s: TestServer) => ['--server', s.url, '--key', s.key];

beforeAll(async () => {
  const graders = unitsDir({ 'answer_match.ts': reexport('graders/answer_match.ts') });
  a = await startTestServer({ toolsDir: finqaToolsDir({ 'clock.ts': CLOCK }), gradersDir: graders });
  tampered = await startTestServer({ toolsDir: finqaToolsDir({ 'read_doc.ts': TAMPERED_READ_DOC, 'clock.ts': CLOCK }), gradersDir: graders });
  const prepared = await prepareFinqa(a, 2);
  const rows = prepared.rows;
  work = prepared.work;
  const base = finqaScript(rows);
  // Row 1 also asks the clock on its first turn, so its record holds a time-dependent output.
  model = await startScriptedModel({
    script: (ctx) => {
      const turn = typeof base === 'function' ? base(ctx) : { text: '' };
      return ctx.turn === 0 && ctx.userText === rows[1]!.messages.at(-1)!.content ? { calls: [...(turn.calls ?? []), { name: 'clock', arguments: {} }] } : turn;
    },
  });
  const r = await runCli(['rollout', '--dataset', prepared.dataset, ...auth(a), '--model', 'scripted', '--base-url', model.baseURL, '--out', join(work, 'results.jsonl')]);
  expect(r.code).toBe(0);
  traceId = readJsonl<RolloutResult>(join(work, 'results.jsonl')).find((x) => x.row === 0)!.trace_id;
});

afterAll(async () => {
  await model?.close();
  await a?.close();
  await tampered?.close();
  removeTempDirs();
});

describe('replay, export and import', () => {
  it('replays a recorded rollout by trace id and finds every output and the grade the same', async () => {
    const r = await runCli(['replay', traceId, ...auth(a)]);
    expect(r.stdout).toMatch(/#1\s+\w+\s+same/);
    expect(r.stdout).toMatch(/grade answer_match: [\d.]+ -> [\d.]+ {2}same/);
    expect(r.stdout.trim().split('\n').at(-1)).toBe('MATCH');
    expect(r.code).toBe(0);
  });

  it('exports the named rollouts as JSONL, one GET /v1/rollouts/:trace_id object per line', async () => {
    const out = join(work, 'export.jsonl');
    const recorded = readJsonl<RolloutResult>(join(work, 'results.jsonl')).map((x) => x.trace_id);
    const r = await runCli(['export', ...auth(a), '--trace', ...recorded, '--out', out]);
    expect(r.code).toBe(0);
    const lines = readJsonl<RolloutJson>(out);
    expect(lines.map((l) => l.trace_id)).toEqual(recorded);
    const one = lines.find((l) => l.trace_id === traceId)!;
    const live = await getJson(a, `/v1/rollouts/${traceId}`);
    expect(one).toEqual(live);
  });

  it('fails the replay of an exported file against a server whose tool changed, with a line diff', async () => {
    const file = join(work, 'one.jsonl');
    expect((await runCli(['export', ...auth(a), '--trace', traceId, '--out', file])).code).toBe(0);
    const r = await runCli(['replay', file, ...auth(tampered)]);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/#\d+\s+read_doc\s+different/);
    expect(r.stdout).toMatch(/#\d+\s+search_docs\s+same/);
    expect(r.stdout).toContain('read_doc (recorded)\n+++ #');
    expect(r.stdout).toMatch(/^@@ -\d+,\d+ \+\d+,\d+ @@$/m);
    expect(r.stdout).toMatch(/^-.*\d/m);
    expect(r.stdout).toMatch(/^\+.*7/m);
    expect(r.stdout).toMatch(/DIVERGED: 1 of 3 calls differ/);
  });

  it('treats outputs that differ only in timestamps and uuids as the same, unless --exact', async () => {
    const clockTrace = readJsonl<RolloutResult>(join(work, 'results.jsonl')).find((x) => x.row === 1)!.trace_id;
    const normalized = await runCli(['replay', clockTrace, ...auth(a)]);
    expect(normalized.stdout).toMatch(/#\d+\s+clock\s+same after normalizing/);
    expect(normalized.code).toBe(0);
    const exact = await runCli(['replay', clockTrace, ...auth(a), '--exact']);
    expect(exact.stdout).toMatch(/#\d+\s+clock\s+different/);
    expect(exact.code).toBe(1);
  });

  it('blanks out extra patterns given with --normalize', async () => {
    const file = join(work, 'one.jsonl');
    // Every digit normalized away: the tampered digits no longer count as a difference.
    const r = await runCli(['replay', file, ...auth(tampered), '--normalize', '[0-9]']);
    expect(r.stdout).toMatch(/#\d+\s+read_doc\s+same after normalizing/);
    expect(r.code).toBe(0);
  });

  it('exports every rollout the server lists when no trace is named', async () => {
    const r = await runCli(['export', ...auth(a)]);
    const listed = await getJson<{ rollouts: { trace_id: string }[] }>(a, '/v1/rollouts?limit=500');
    const exported = r.stdout.trim().split('\n').map((l) => (JSON.parse(l) as RolloutJson).trace_id);
    expect(exported.sort()).toEqual(listed.rollouts.map((x) => x.trace_id).sort());
    expect(exported.length).toBeGreaterThan(2); // the two recorded, plus the replays above
  });

  it('exports only rollouts updated since --since', async () => {
    const later = await runCli(['export', ...auth(a), '--since', new Date(Date.now() + 60_000).toISOString()]);
    expect(later.stdout).toBe('');
    expect(later.stderr).toContain('exported 0 rollouts');
    const earlier = await runCli(['export', ...auth(a), '--since', '2000-01-01T00:00:00Z']);
    expect(earlier.stdout.trim().split('\n').length).toBeGreaterThanOrEqual(2);
  });

  it('imports an export into another server, and a second import finds the rollouts already there', async () => {
    const file = join(work, 'export.jsonl');
    const first = await runCli(['import', file, ...auth(tampered)]);
    expect(first.stdout).toContain('imported 2 rollouts, 0 already present');
    const again = await runCli(['import', file, ...auth(tampered)]);
    expect(again.stdout).toContain('imported 0 rollouts, 2 already present');
    const copy = await getJson<RolloutJson>(tampered, `/v1/rollouts/${traceId}`);
    const original = JSON.parse(readFileSync(file, 'utf8').split('\n').find((l) => l.includes(traceId))!) as RolloutJson;
    expect(copy.calls).toEqual(original.calls);
  });

  it('exits 3 (the server\'s answer) with a coded error when the trace id is unknown', async () => {
    const r = await runCli(['replay', 'trace_does-not-exist', ...auth(a)]);
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/RFT_ERR_SERVER_REPLY.*404/);
  });
});
