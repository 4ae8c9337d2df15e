import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RolloutResult } from '../../../src/cli/rollout/run.js';
import { startScriptedModel, type ScriptedModel } from '../../helpers/scripted-model.js';
import { startTestServer, type TestServer } from '../../helpers/server.js';
import { finqaScript, finqaToolsDir, getJson, prepareFinqa, readJsonl, reexport, removeTempDirs, repoRoot, runCli, unitsDir } from '../harness.js';

const secret = `whsec_${randomBytes(24).toString('base64')}`;
let server: TestServer;
let model: ScriptedModel;
let dataset: string;
let work: string;

beforeAll(async () => {
  // One grader that always fails (500 each time), next to the real one.
  const boom = `import { defineGrader } from ${JSON.stringify(join(repoRoot, 'src/index.ts'))};
export default defineGrader({ name: 'boom', description: 'always fails', handler() { throw new Error('grader exploded'); } });
`;
  // One grader whose itemSchema no finqa row matches: every grade is refused with RFT_ERR_BAD_ROW.
  const strict = `import { defineGrader, z } from ${JSON.stringify(join(repoRoot, 'src/index.ts'))};
export default defineGrader({ name: 'strict', description: 'needs a field no row has', itemSchema: z.looseObject({ a_field_no_row_has: z.string() }), handler() { return 1; } });
`;
  server = await startTestServer({
    toolsDir: finqaToolsDir(),
    gradersDir: unitsDir({ 'answer_match.ts': reexport('graders/answer_match.ts'), 'boom.ts': boom, 'strict.ts': strict }),
    env: { RFT_SIGNING_SECRETS: secret },
  });
  const prepared = await prepareFinqa(server, 2);
  ({ dataset, work } = prepared);
  model = await startScriptedModel({ script: finqaScript(prepared.rows) });
});

afterAll(async () => {
  await model?.close();
  await server?.close();
  removeTempDirs();
});

function rollout(out: string, auth: string[], extra: string[] = []) {
  return runCli(['rollout', '--dataset', dataset, '--server', server.url, ...auth, '--model', 'scripted', '--base-url', model.baseURL, '--out', out, ...extra]);
}

describe('rollout follows the trainer rules', () => {
  it('retries a failing grader 3 times, then discards the rollout; every rollout discarded exits 1 saying how to retry', async () => {
    const out = join(work, 'boom.jsonl');
    const r = await rollout(out, ['--key', server.key], ['--grader-path', '/graders/boom']);
    expect(r.code).toBe(1);
    expect(r.stderr.trimEnd().split('\n').at(-1)).toMatch(/^error RFT_ERR_ALL_DISCARDED: all 2 rollouts were discarded \(first: RFT_ERR_ROLLOUT_DISCARDED .*--retry-discarded$/);
    const results = readJsonl<RolloutResult>(out);
    expect(results).toHaveLength(2);
    for (const x of results) {
      expect(x).toMatchObject({ discarded: true, score: null, error_code: 'RFT_ERR_ROLLOUT_DISCARDED', tool_calls: 3 });
      expect(x.error).toMatch(/failed 4 times.*500/);
      const rec = await getJson<{ grades: unknown[] }>(server, `/v1/rollouts/${x.trace_id}`);
      // The server recorded each of the 4 attempts as a failed grade.
      expect(rec.grades).toHaveLength(4);
    }
  });

  it('a row the grader refuses is recorded as RFT_ERR_BAD_ROW with the whole message, and the hint is the dataset check, not --retry-discarded', async () => {
    const out = join(work, 'bad-rows.jsonl');
    const r = await rollout(out, ['--key', server.key], ['--grader-path', '/graders/strict']);
    expect(r.code).toBe(1);
    const last = r.stderr.trimEnd().split('\n').at(-1)!;
    expect(last).toMatch(/^error RFT_ERR_ALL_DISCARDED: all 2 rollouts were discarded \(first: RFT_ERR_BAD_ROW /);
    expect(last).toContain(`rft-endpoints dataset check ${dataset}`);
    expect(last).not.toContain('--retry-discarded');
    for (const x of readJsonl<RolloutResult>(out)) {
      expect(x).toMatchObject({ discarded: true, score: null, error_code: 'RFT_ERR_BAD_ROW' });
      // The server's message whole, not cut mid-word.
      expect(x.error).toContain('a_field_no_row_has');
      expect(x.error).toMatch(/check the dataset with `rft-endpoints dataset check`$/);
    }
  });

  it('runs discarded rollouts again with --retry-discarded, and the report counts each (row, try) once', async () => {
    const out = join(work, 'boom.jsonl'); // written by the test above: every rollout discarded
    const plain = await rollout(out, ['--key', server.key]);
    expect(plain.stdout).toContain('0 rollouts (2 skipped as done)');
    // A rerun that runs nothing says how to start over.
    expect(plain.stderr).toContain(`nothing to run: all 2 rollouts are already in ${out}; to start over, name a new --out`);
    const retried = await rollout(out, ['--key', server.key, '--retry-discarded']);
    expect(retried.stdout).toContain('2 rollouts (0 skipped as done)');
    expect(readJsonl<RolloutResult>(out)).toHaveLength(4);
    const report = await runCli(['report', out]);
    expect(report.stdout).toMatch(/rollouts\s+2 \(2 graded, 0 discarded\)/);
  });

  it('signs every request with --signing-secret, and the server accepts them', async () => {
    const out = join(work, 'signed.jsonl');
    const r = await rollout(out, ['--signing-secret', secret]);
    expect(r.code).toBe(0);
    const results = readJsonl<RolloutResult>(out);
    expect(results.every((x) => !x.discarded && x.score !== null && x.tool_calls === 3)).toBe(true);
    // The budget read is a signed GET (over the empty body): the server answered it too.
    expect(results.every((x) => x.budget_exhausted === false)).toBe(true);
  });

  it('takes the signing secret from RFT_SIGNING_SECRET too, and refuses a wrong one before the first row', async () => {
    const out = join(work, 'wrong-secret.jsonl');
    const wrong = `whsec_${randomBytes(24).toString('base64')}`;
    const child = await runCli(
      ['rollout', '--dataset', dataset, '--server', server.url, '--model', 'scripted', '--base-url', model.baseURL, '--out', out],
      { RFT_SIGNING_SECRET: wrong },
    );
    expect(child.code).toBe(3);
    expect(child.stderr).toMatch(/^error RFT_ERR_SERVER_AUTH: .*\(RFT_ERR_SIGNATURE_INVALID\)/);
    expect(existsSync(out)).toBe(false);
  });
});
