// `rollout --model scripted:FILE` and `--model replay:EXPORT`: the package's own model, served in the
// CLI's process, against a real server with the finqa tools and grader; no key and no model endpoint
// in the environment (runCli passes none). And --temperature / --reasoning-effort reaching a real endpoint.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DatasetRow } from '../../../src/cli/rollout/dataset.js';
import type { RolloutResult } from '../../../src/cli/rollout/run.js';
import { rowTriesFromExport } from '../../../src/cli/models/replay-script.js';
import { rowTriesFromFile } from '../../../src/cli/models/scripted-file.js';
import { startFakeOpenAI } from '../../helpers/fake-openai.js';
import { startScriptedModel } from '../../helpers/scripted-model.js';
import { startTestServer, type TestServer } from '../../helpers/server.js';
import { finqaToolsDir, getJson, prepareFinqa, readJsonl, reexport, removeTempDirs, runCli, unitsDir, writeJsonl } from '../harness.js';

let server: TestServer;
let rows: DatasetRow[];
let dataset: string;
let work: string;

const rollout = (out: string, model: string, extra: string[] = [], env: Record<string, string> = {}) =>
  runCli(['rollout', '--dataset', dataset, '--server', server.url, '--key', server.key, '--model', model, '--out', out, ...extra], env);

interface Rec {
  item: DatasetRow;
  calls: { tool: string; arguments: string }[];
  grades: { sample: { output_text: string } }[];
}

beforeAll(async () => {
  server = await startTestServer({ toolsDir: finqaToolsDir(), gradersDir: unitsDir({ 'answer_match.ts': reexport('graders/answer_match.ts') }) });
  ({ rows, dataset, work } = await prepareFinqa(server, 3));
});

afterAll(async () => {
  await server?.close();
  removeTempDirs();
});

const reference = (i: number) => String(rows[i]!.reference_answer);
const question = (i: number) => String(rows[i]!.messages.at(-1)!.content);

/** Row 0 by id (right, then wrong), row 2 by index (a malformed call, then right), row 1 by the default (parallel calls, wrong). */
function scriptFile(): string {
  const file = join(work, 'script.jsonl');
  writeJsonl(file, [
    {
      id: rows[0]!.id,
      tries: [
        [{ calls: [{ name: 'search_docs', arguments: { query: question(0) } }] }, { text: `Answer: ${reference(0)}` }],
        [{ text: 'Answer: I do not know' }],
      ],
    },
    { row: 2, turns: [{ calls: [{ name: 'read_doc', arguments: '{"doc_id":' }] }, { text: `Answer: ${reference(2)}` }] },
    { default: true, turns: [{ calls: [{ name: 'list_docs', arguments: {} }, { name: 'search_docs', arguments: { query: 'revenue' } }] }, { text: 'Answer: 0' }] },
  ]);
  return file;
}

describe('rollout --model scripted:FILE', () => {
  let out: string;

  for (const api of ['responses', 'chat']) {
    it(`plays each row's scripted turns in this process, trying each row's tries in turn (--api ${api})`, async () => {
      out = join(work, `scripted-${api}.jsonl`);
      const r = await rollout(out, `scripted:${scriptFile()}`, ['-k', '2', '--concurrency', '4', '--api', api]);
      expect(r.stderr).not.toMatch(/RFT_ERR/);
      expect(r.code).toBe(0);
      const results = readJsonl<RolloutResult>(out).sort((a, b) => a.row - b.row || (a.score ?? 0) - (b.score ?? 0));
      expect(results.map((x) => [x.row, x.score! > 0.5, x.tool_calls, x.steps])).toEqual([
        [0, false, 0, 1],
        [0, true, 1, 2],
        [1, false, 2, 2],
        [1, false, 2, 2],
        [2, true, 1, 2],
        [2, true, 1, 2],
      ]);
      const rec = await getJson<Rec>(server, `/v1/rollouts/${results[4]!.trace_id}`);
      expect(rec.calls).toMatchObject([{ tool: 'read_doc', arguments: '{"doc_id":' }]);
      expect(rec.grades[0]!.sample.output_text).toBe(`Answer: ${reference(2)}`);
    }, 120_000);
  }

  it('replays the model side of exported rollouts: the same calls, answers and scores per row (replay:EXPORT)', async () => {
    const exported = join(work, 'export.jsonl');
    const ids = readJsonl<RolloutResult>(out).map((x) => x.trace_id);
    const ex = await runCli(['export', '--server', server.url, '--key', server.key, '--out', exported, '--trace', ...ids]);
    expect(ex.code, ex.stderr).toBe(0);
    const again = join(work, 'replayed.jsonl');
    const r = await rollout(again, `replay:${exported}`, ['-k', '2']);
    expect(r.stderr).not.toMatch(/RFT_ERR/);
    expect(r.code).toBe(0);
    const summary = async (file: string) =>
      (
        await Promise.all(
          readJsonl<RolloutResult>(file).map(async (x) => {
            const rec = await getJson<Rec>(server, `/v1/rollouts/${x.trace_id}`);
            return JSON.stringify([x.row, x.score, rec.calls.map((c) => [c.tool, c.arguments]).sort(), rec.grades[0]!.sample.output_text]);
          }),
        )
      ).sort();
    expect(await summary(again)).toEqual(await summary(out));
  }, 120_000);

  it('refuses a file that leaves a row unscripted, names a row the dataset lacks, or misspells a key (exit 2, RFT_ERR_MODEL_SCRIPT)', async () => {
    const cases: [unknown[], RegExp][] = [
      [[{ row: 0, turns: [{ text: 'a' }] }], /no scripted turns for rows 1, 2/],
      [[{ id: 'no-such-row', turns: [{ text: 'a' }] }], /:1: no dataset row has id "no-such-row"/],
      [[{ default: true, turns: [{ call: [{ name: 'list_docs' }] }] }], /:1: .*call/],
      [[{ default: true, turns: [{ text: 'a' }] }, { default: true, turns: [{ text: 'b' }] }], /:2: the default is scripted twice \(first on line 1\)/],
    ];
    const file = join(work, 'bad-script.jsonl');
    for (const [lines, why] of cases) {
      writeJsonl(file, lines);
      expect(() => rowTriesFromFile(file, rows)).toThrow(why);
      expect(() => rowTriesFromFile(file, rows)).toThrow(expect.objectContaining({ code: 'RFT_ERR_MODEL_SCRIPT' }));
    }
    // A script file is no export.
    expect(() => rowTriesFromExport(join(work, 'script.jsonl'), rows)).toThrow(expect.objectContaining({ code: 'RFT_ERR_DATASET' }));
    // The command refuses before the first rollout, with the usage exit status.
    const r = await rollout(join(work, 'never.jsonl'), `scripted:${file}`);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^error RFT_ERR_MODEL_SCRIPT: .*:2: the default is scripted twice/);
  }, 120_000);
});

describe('--temperature and --reasoning-effort', () => {
  it('reach the body of every Chat Completions request, and are absent when not given', async () => {
    const fake = await startFakeOpenAI({ chat: () => ({ kind: 'text', text: 'Answer: 1' }) });
    try {
      const base = ['--api', 'chat', '--base-url', fake.baseURL];
      const r = await rollout(join(work, 'chat-sampling.jsonl'), 'gpt-test', [...base, '--temperature', '0.3', '--reasoning-effort', 'low'], { OPENAI_API_KEY: fake.apiKey });
      expect(r.code, r.stderr).toBe(0);
      const bodies = fake.requests.filter((q) => q.path === '/v1/chat/completions').map((q) => q.body);
      expect(bodies).toHaveLength(rows.length);
      for (const b of bodies) expect(b).toMatchObject({ model: 'gpt-test', temperature: 0.3, reasoning_effort: 'low' });
      fake.requests.length = 0;
      expect((await rollout(join(work, 'chat-plain.jsonl'), 'gpt-test', base, { OPENAI_API_KEY: fake.apiKey })).code).toBe(0);
      for (const q of fake.requests) expect(Object.keys(q.body)).not.toContain('temperature');
      for (const q of fake.requests) expect(Object.keys(q.body)).not.toContain('reasoning_effort');
    } finally {
      await fake.close();
    }
  }, 120_000);

  it('reach the Responses API as temperature and reasoning.effort; a temperature out of range is a usage error', async () => {
    const model = await startScriptedModel({ script: [{ text: 'Answer: 1' }] });
    try {
      const r = await rollout(join(work, 'resp-sampling.jsonl'), 'gpt-test', ['--api', 'responses', '--base-url', model.baseURL, '--temperature', '0', '--reasoning-effort', 'high']);
      expect(r.code, r.stderr).toBe(0);
      expect(model.requests).toHaveLength(rows.length);
      for (const q of model.requests) expect(q.body).toMatchObject({ temperature: 0, reasoning: { effort: 'high' } });
      const bad = await rollout(join(work, 'never.jsonl'), 'gpt-test', ['--base-url', model.baseURL, '--temperature', 'warm']);
      expect(bad.code).toBe(2);
      expect(bad.stderr).toMatch(/^error RFT_ERR_CLI_USAGE: --temperature/);
    } finally {
      await model.close();
    }
  }, 120_000);
});
