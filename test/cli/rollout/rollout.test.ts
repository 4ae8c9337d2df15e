import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DatasetRow } from '../../../src/cli/rollout/dataset.js';
import type { RolloutResult } from '../../../src/cli/rollout/run.js';
import { startScriptedModel, type ScriptedModel } from '../../helpers/scripted-model.js';
import { startTestServer, type TestServer } from '../../helpers/server.js';
import { finqaScript, finqaToolsDir, getJson, prepareFinqa, readJsonl, reexport, removeTempDirs, runCli, signalAfterLines, spawnCli, unitsDir } from '../harness.js';

let server: TestServer;
let model: ScriptedModel;
let rows: DatasetRow[];
let dataset: string;
let work: string;

async function rollout(out: string, extra: string[] = [], url = server.url, key = server.key, baseURL = model.baseURL) {
  return runCli(['rollout', '--dataset', dataset, '--server', url, '--key', key, '--model', 'scripted', '--base-url', baseURL, '--out', out, ...extra]);
}

beforeAll(async () => {
  server = await startTestServer({ toolsDir: finqaToolsDir(), gradersDir: unitsDir({ 'answer_match.ts': reexport('graders/answer_match.ts') }) });
  ({ rows, dataset, work } = await prepareFinqa(server, 3));
  model = await startScriptedModel({ script: finqaScript(rows) });
});

afterAll(async () => {
  await model?.close();
  await server?.close();
  removeTempDirs();
});

describe('rollout over the finqa example', () => {
  it('records one graded result per (row, try), with the tool calls the model made', async () => {
    const out = join(work, 'results.jsonl');
    const r = await rollout(out, ['-k', '4', '--concurrency', '3']);
    expect(r.stderr).not.toMatch(/RFT_ERR/);
    expect(r.code).toBe(0);
    const results = readJsonl<RolloutResult>(out);
    expect(results.map((x) => `${x.row}:${x.try}`).sort()).toEqual(rows.flatMap((_, i) => [0, 1, 2, 3].map((t) => `${i}:${t}`)).sort());
    for (const x of results) {
      expect(x).toMatchObject({ discarded: false, error: null, tool_calls: 3, steps: 3, budget_exhausted: false });
      expect(x.trace_id).toMatch(/^trace_[0-9a-f-]{36}$/);
    }
    // Row 1 is always answered right, row 2 never: the grader must tell them apart.
    const mean = (row: number) => results.filter((x) => x.row === row).reduce((s, x) => s + (x.score ?? 0), 0) / 4;
    expect(mean(1)).toBeGreaterThan(0.5);
    expect(mean(2)).toBeLessThan(0.2);
  });

  it('sends tool calls in the wire format, which the server records under the rollout trace id', async () => {
    const [first] = readJsonl<RolloutResult>(join(work, 'results.jsonl'));
    const rec = await getJson<{
      item: DatasetRow;
      calls: { tool: string; status: string }[];
      grades: { sample: { output_tools: unknown[]; output_text: string } }[];
    }>(server, `/v1/rollouts/${first!.trace_id}`);
    expect(rec.item.messages).toEqual(rows[first!.row]!.messages);
    expect(rec.calls.map((c) => c.tool).sort()).toEqual(['list_docs', 'read_doc', 'search_docs']);
    expect(rec.grades[0]!.sample.output_tools).toHaveLength(3);
    expect(rec.grades[0]!.sample.output_text).toMatch(/^Answer: /);
  });

  it('labels its rollouts with --run (x-rft-run): the server lists them under the run, and export --run selects them', async () => {
    const out = join(work, 'labelled.jsonl');
    const r = await rollout(out, ['--run', 'cli baseline']);
    expect(r.code).toBe(0);
    const traces = readJsonl<RolloutResult>(out).map((x) => x.trace_id).sort();
    const listed = await getJson<{ rollouts: { trace_id: string; run: string }[] }>(server, '/v1/rollouts?run=cli%20baseline');
    expect(listed.rollouts.map((x) => x.trace_id).sort()).toEqual(traces);
    const exported = await runCli(['export', '--server', server.url, '--key', server.key, '--run', 'cli baseline']);
    expect(exported.code).toBe(0);
    const lines = exported.stdout.trim().split('\n').map((l) => JSON.parse(l) as { trace_id: string; run: string });
    expect(lines.map((l) => [l.trace_id, l.run]).sort()).toEqual(traces.map((t) => [t, 'cli baseline']));
    const bad = await rollout(join(work, 'bad-run.jsonl'), ['--run', 'x'.repeat(65)]);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/RFT_ERR_BAD_RUN_LABEL/);
  });

  it('summarizes the results: per-row means, rows without learning signal, and an offline HTML page', async () => {
    const html = join(work, 'report.html');
    const r = await runCli(['report', join(work, 'results.jsonl'), '--html', html]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/rows with no learning signal\s+\d+ of 3/);
    expect(r.stdout).toMatch(/tool calls per rollout\s+mean 3,/);
    const page = readFileSync(html, 'utf8');
    expect(page.match(/<svg /g)).toHaveLength(4);
    expect(page).not.toMatch(/<script|https?:\/\/(?!www\.w3\.org)/);
  });

  it('resumes an interrupted run without repeating the rollouts it finished', async () => {
    const slow = await startScriptedModel({ script: finqaScript(rows), latencyMs: 150 });
    const out = join(work, 'interrupted.jsonl');
    const child = spawnCli(['rollout', '--dataset', dataset, '--server', server.url, '--key', server.key, '--model', 'scripted', '--base-url', slow.baseURL, '--out', out, '-k', '3', '--concurrency', '1']);
    await signalAfterLines(child, out, 2, 'SIGKILL');
    const before = readJsonl<RolloutResult>(out);
    expect(before.length).toBeLessThan(rows.length * 3);
    const r = await rollout(out, ['-k', '3', '--concurrency', '2'], server.url, server.key, slow.baseURL);
    await slow.close();
    expect(r.code).toBe(0);
    expect(r.stderr).toContain(`resuming: ${before.length} rollouts already in`);
    const after = readJsonl<RolloutResult>(out);
    const keys = after.map((x) => `${x.row}:${x.try}`);
    expect(new Set(keys).size).toBe(keys.length);
    expect(keys).toHaveLength(rows.length * 3);
    // The finished rollouts kept their lines (same trace ids), they were not run again.
    expect(after.slice(0, before.length)).toEqual(before);
  }, 90_000); // two CLI runs against a model answering in 150 ms: a CI run took 14 s of the default 30

  it('falls back to Chat Completions when the model server has no Responses API', async () => {
    const chatOnly = await startScriptedModel({ script: finqaScript(rows), responsesApi: false });
    const out = join(work, 'chat.jsonl');
    const r = await rollout(out, ['--api', 'auto'], server.url, server.key, chatOnly.baseURL);
    await chatOnly.close();
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('api chat');
    expect(readJsonl<RolloutResult>(out).every((x) => x.score !== null && x.tool_calls === 3)).toBe(true);
    expect(chatOnly.requests.filter((q) => q.api === 'chat').length).toBe(rows.length * 3);
  });
});
