// check-grader --from-export: a grader that reads the rollout's tool calls is probed with the calls
// of real recorded rollouts (recorded here by a real server, exported as `export` writes them), where
// the dataset's empty probes can only fail it.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCheckGrader } from '../../src/cli/check-grader.js';
import { bearer, functionCall } from '../helpers/fixtures.js';
import { repoRoot, startTestServer, type TestServer } from '../helpers/server.js';

const graders = join(repoRoot, 'test/fixtures/trajectory-graders');
let dir: string;
let server: TestServer;
let env: Record<string, string | undefined>;
const rows = [
  { messages: [{ role: 'user', content: 'Q3 revenue?' }], reference_answer: 'Revenue was $4.2 million in Q3' },
  { messages: [{ role: 'user', content: 'Margin?' }], reference_answer: 'The operating margin was 12.5%' },
];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'check-grader-export-'));
  server = await startTestServer({ toolsDir: join(repoRoot, 'test/fixtures/units/tools'), gradersDir: graders, listen: false });
  // One recorded rollout per row: two lookups (echo), as a model would have made them.
  const lines: string[] = [];
  for (const [i, item] of rows.entries()) {
    const trace = `trace_recorded_${i}`;
    for (const text of ['first', 'second']) {
      const res = await server.app.inject({ method: 'POST', url: '/tools', headers: bearer(server.key), payload: functionCall('echo', { text }, { trace_id: trace, item }) });
      expect(res.statusCode).toBe(200);
    }
    lines.push((await server.app.inject({ method: 'GET', url: `/v1/rollouts/${trace}`, headers: bearer(server.key) })).body);
  }
  writeFileSync(join(dir, 'export.jsonl'), lines.join('\n') + '\n');
  writeFileSync(join(dir, 'data.jsonl'), rows.map((r) => JSON.stringify(r)).join('\n') + '\n');
  env = { PATH: process.env.PATH, RFT_GRADERS_DIR: graders, RFT_TOOLS_DIR: join(repoRoot, 'test/fixtures/units/tools'), RFT_SANDBOX: 'none', RFT_LOG_LEVEL: 'error' };
});
afterAll(async () => {
  await server?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('check-grader --from-export', () => {
  it('probes with the recorded calls, in the rollout and in the sample: the reference scores 1, near misses less, doing nothing 0', async () => {
    const r = await runCheckGrader({ fromExport: join(dir, 'export.jsonl'), grader: 'looked_up', env });
    expect(r.rows.map((x) => [x.noop.score, x.reference?.score])).toEqual([
      [0, 1],
      [0, 1],
    ]);
    expect(r.rows.every((x) => x.continuity!.distinct >= 3)).toBe(true);
    expect(r.passed).toBe(true);
  });

  it('is what a dataset cannot do: with no recorded calls the same grader fails every reference probe', async () => {
    const r = await runCheckGrader({ dataset: join(dir, 'data.jsonl'), grader: 'looked_up', env });
    expect(r.summary.reference).toEqual({ passed: 0, failed: 2, skipped: 0 });
  });

  it('needs exactly one of --dataset and --from-export (RFT_ERR_CLI_USAGE)', async () => {
    await expect(runCheckGrader({ grader: 'looked_up', env })).rejects.toMatchObject({ code: 'RFT_ERR_CLI_USAGE' });
    await expect(runCheckGrader({ dataset: join(dir, 'data.jsonl'), fromExport: join(dir, 'export.jsonl'), grader: 'looked_up', env })).rejects.toMatchObject({ code: 'RFT_ERR_CLI_USAGE' });
  });
});
