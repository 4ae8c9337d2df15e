import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RolloutResult } from '../../src/cli/rollout/run.js';
import { startScriptedModel } from '../helpers/scripted-model.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { finqaScript, finqaToolsDir, getJson, prepareFinqa, readJsonl, reexport, removeTempDirs, repoRoot, runCli, tempDir, unitsDir } from './harness.js';

const src = (p: string) => JSON.stringify(join(repoRoot, p));

// answer_match, changed: half the credit for everything, under a new version.
const HALVED = `import base from ${src('graders/answer_match.ts')};
import { defineGrader } from ${src('src/index.ts')};
export default defineGrader({ ...base, version: 'halved-v2', async handler(input, ctx) {
  const r = await base.handler(input, ctx);
  return { score: (typeof r === 'number' ? r : r.score) / 2 };
} });
`;

let server: TestServer;
let results: RolloutResult[];

beforeAll(async () => {
  const dataDir = tempDir('rft-data-');
  const toolsDir = finqaToolsDir();
  const first = await startTestServer({ dataDir, toolsDir, gradersDir: unitsDir({ 'answer_match.ts': reexport('graders/answer_match.ts') }) });
  const { rows, dataset, work } = await prepareFinqa(first, 2);
  const model = await startScriptedModel({ script: finqaScript(rows) });
  const out = join(work, 'results.jsonl');
  const r = await runCli(['rollout', '--dataset', dataset, '--server', first.url, '--key', first.key, '--model', 'scripted', '--base-url', model.baseURL, '--out', out, '-k', '2']);
  expect(r.code).toBe(0);
  results = readJsonl<RolloutResult>(out);
  await model.close();
  await first.close();
  // The same record, served again after the grader changed.
  server = await startTestServer({ dataDir, toolsDir, gradersDir: unitsDir({ 'answer_match.ts': HALVED }) });
});

afterAll(async () => {
  await server?.close();
  removeTempDirs();
});

describe('regrade after a grader change', () => {
  it('reports each rollout with its old and new score and grader version, and a summary of the changes', async () => {
    const r = await runCli(['regrade', '--server', server.url, '--key', server.key]);
    expect(r.code).toBe(0);
    for (const x of results) {
      const line = r.stdout.split('\n').find((l) => l.startsWith(x.trace_id))!;
      const cells = line.split(/\s{2,}/);
      expect(cells[1]).toBe('answer_match');
      expect(Number(cells[2])).toBeCloseTo(x.score!, 3);
      expect(cells[3]).not.toBe('halved-v2'); // the old version was the file hash
      expect(Number(cells[4])).toBeCloseTo(x.score! / 2, 3);
      expect(cells[5]).toBe('halved-v2');
      expect(Number(cells[6])).toBeCloseTo(-x.score! / 2, 3);
    }
    const changed = results.filter((x) => x.score! > 0).length;
    expect(changed).toBeGreaterThan(0);
    expect(r.stdout).toContain(`4 regraded, ${changed} changed (0 up, ${changed} down)`);
  });

  it('records the new score beside the old one on the server', async () => {
    const rec = await getJson<{ grades: { source: string; grader_version: string; score: number }[] }>(server, `/v1/rollouts/${results[0]!.trace_id}`);
    expect(rec.grades.map((g) => g.source)).toEqual(expect.arrayContaining(['endpoint', 'regrade']));
    expect(rec.grades.find((g) => g.source === 'regrade')!.grader_version).toBe('halved-v2');
  });

  it('makes replay fail when the same sample now scores differently, naming both grader versions', async () => {
    const right = results.find((x) => x.score! > 0)!;
    const r = await runCli(['replay', right.trace_id, '--server', server.url, '--key', server.key]);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(new RegExp(`grade answer_match: ${right.score} -> ${right.score! / 2}  different \\(grader version \\S+ -> halved-v2\\)`));
    expect(r.stdout).toMatch(/DIVERGED: 0 of 3 calls differ, grade differs/);
  });

  it('regrades only the rollouts named with --trace', async () => {
    const r = await runCli(['regrade', '--server', server.url, '--key', server.key, '--trace', results[1]!.trace_id]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('1 regraded');
    // Its previous score is now the regraded one, so nothing changes a second time.
    expect(r.stdout).toContain('0 changed');
  });
});
