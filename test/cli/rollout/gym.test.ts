// `rollout --door nemo-gym` against the real NeMo Gym door: the finqa example played by the same
// scripted model through the Agent RFT routes and through the door gets the same rewards, and the
// door's record holds the rollout's calls in the order simple_agent sends them.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DatasetRow } from '../../../src/cli/rollout/dataset.js';
import type { GymRolloutResult } from '../../../src/cli/rollout/gym.js';
import type { RolloutResult } from '../../../src/cli/rollout/run.js';
import { startScriptedModel } from '../../helpers/scripted-model.js';
import { startTestServer, type TestServer } from '../../helpers/server.js';
import { finqaScript, finqaToolsDir, getJson, prepareFinqa, readJsonl, reexport, removeTempDirs, runCli, unitsDir } from '../harness.js';

let server: TestServer;
let door: string;
let rows: DatasetRow[];
let dataset: string;
let work: string;

beforeAll(async () => {
  server = await startTestServer({
    toolsDir: finqaToolsDir(),
    gradersDir: unitsDir({ 'answer_match.ts': reexport('graders/answer_match.ts') }),
    env: { RFT_NEMO_GYM_PORT: '0' },
  });
  door = server.app.rft.nemoGym!.url;
  ({ rows, dataset, work } = await prepareFinqa(server, 3));
});

afterAll(async () => {
  await server?.close();
  removeTempDirs();
});

/** k = 2 tries of each row, one at a time, with a fresh model: finqaScript's answers depend on the try order. */
async function run(out: string, extra: string[]): Promise<RolloutResult[]> {
  const model = await startScriptedModel({ script: finqaScript(rows) });
  try {
    const r = await runCli([
      'rollout', '--dataset', dataset, '--server', server.url, '--key', server.key, '--model', 'scripted', '--base-url', model.baseURL,
      '--out', out, '-k', '2', '--concurrency', '1', ...extra,
    ]);
    expect(r.stderr).not.toMatch(/RFT_ERR/);
    expect(r.code).toBe(0);
  } finally {
    await model.close();
  }
  return readJsonl<RolloutResult>(out).sort((a, b) => a.row - b.row || a.try - b.try);
}

describe('rollout --door nemo-gym over the finqa example', { timeout: 120_000 }, () => {
  let rft: RolloutResult[];
  let gym: GymRolloutResult[];

  it('gets the rewards the Agent RFT routes give the same script', async () => {
    rft = await run(join(work, 'rft.jsonl'), []);
    gym = (await run(join(work, 'gym.jsonl'), ['--door', 'nemo-gym', '--door-url', door])) as GymRolloutResult[];
    expect(gym.map((x) => [x.row, x.try])).toEqual(rft.map((x) => [x.row, x.try]));
    expect(gym.map((x) => x.score)).toEqual(rft.map((x) => x.score));
    // Row 1 is always answered right, row 2 never: the rewards are not all the same.
    expect(new Set(gym.map((x) => x.score)).size).toBeGreaterThan(1);
    for (const x of gym) {
      expect(x).toMatchObject({ discarded: false, error: null, tool_calls: 3, steps: 3, budget_exhausted: false, failure_class: null });
      expect(x.trace_id).toMatch(/^ng_/);
    }
  });

  it("records each rollout under the door's session, its calls in simple_agent's order", async () => {
    const rec = await getJson<{ door: string; item: Record<string, unknown>; calls: { tool: string; status: string }[]; grades: { score: number }[] }>(
      server,
      `/v1/rollouts/${gym[0]!.trace_id}`,
    );
    expect(rec.door).toBe('nemo-gym');
    expect(rec.item.reference_answer).toBe(rows[0]!.reference_answer);
    expect(rec.calls.map((c) => c.tool)).toEqual(['search_docs', 'list_docs', 'read_doc']);
    expect(rec.grades.map((g) => g.score)).toEqual([gym[0]!.score]);
  });
});
