// Several graders and no RFT_DEFAULT_GRADER, from the CLI: `rollout` is discarded with the server's
// coded error, which names the setting (not a bare 404 "unknown grader"), and `dataset check` says
// which grader fields it left unchecked.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startScriptedModel, type ScriptedModel } from '../helpers/scripted-model.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { finqaScript, finqaToolsDir, prepareFinqa, reexport, removeTempDirs, runCli, unitsDir } from './harness.js';
import { fixtureGraders, fixtureTools } from '../helpers/fixtures.js';

let server: TestServer;
let model: ScriptedModel;

beforeAll(async () => {
  const graders = unitsDir({
    'exact.ts': reexport('test/fixtures/units/graders/exact.ts'),
    'answer_contains.json': readFileSync(join(import.meta.dirname, '../../graders/answer_contains.json'), 'utf8'),
  });
  server = await startTestServer({ toolsDir: finqaToolsDir(), gradersDir: graders });
});

afterAll(async () => {
  await model?.close();
  await server?.close();
  removeTempDirs();
});

it('rollout reports the server\'s RFT_ERR_NO_DEFAULT_GRADER, naming RFT_DEFAULT_GRADER', async () => {
  const { rows, dataset, work } = await prepareFinqa(server, 1);
  model = await startScriptedModel({ script: finqaScript(rows) });
  const out = join(work, 'results.jsonl');
  const r = await runCli(['rollout', '--dataset', dataset, '--server', server.url, '--key', server.key, '--model', 'scripted', '--base-url', model.baseURL, '--out', out]);
  expect(r.code).not.toBe(0);
  expect(r.stderr).toContain('RFT_ERR_NO_DEFAULT_GRADER');
  expect(r.stderr).toContain('set RFT_DEFAULT_GRADER');
}, 60_000);

it('dataset check says the grader fields went unchecked, and how to choose', async () => {
  const { dataset } = await prepareFinqa(server, 1);
  const r = await runCli(['dataset', 'check', dataset, '--min-rows', '1'], { RFT_TOOLS_DIR: fixtureTools, RFT_GRADERS_DIR: fixtureGraders });
  expect(r.stdout).toContain('3 graders and no RFT_DEFAULT_GRADER: their fields unchecked (--grader NAME)');
}, 60_000);
