import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DatasetRow } from '../../../src/cli/rollout/dataset.js';
import type { RolloutResult } from '../../../src/cli/rollout/run.js';
import { startScriptedModel, type Script } from '../../helpers/scripted-model.js';
import { startTestServer, type TestServer } from '../../helpers/server.js';
import { waitFor } from '../../helpers/wait.js';
import { finqaScript, finqaToolsDir, getJson, prepareFinqa, readJsonl, reexport, removeTempDirs, repoRoot, runCli, signalAfterLines, spawnCli, unitsDir, writeJsonl } from '../harness.js';

let server: TestServer;
let rows: DatasetRow[];
let dataset: string;
let work: string;

// list_docs once the other parallel call of the rollout has arrived too (each waits for the other,
// at most 10 s): calls sent together overlap; calls sent one after the other cannot.
const SLOW = `import base from ${JSON.stringify(join(repoRoot, 'tools/list_docs.ts'))};
import { defineTool } from ${JSON.stringify(join(repoRoot, 'src/index.ts'))};
const arrived = new Map();
export default defineTool({ ...base, name: 'slow', description: 'slow list', async handler(args, ctx) {
  arrived.set(ctx.traceId, (arrived.get(ctx.traceId) ?? 0) + 1);
  for (const end = Date.now() + 10_000; arrived.get(ctx.traceId) < 2 && Date.now() < end; ) await new Promise((r) => setTimeout(r, 10));
  return base.handler(args, ctx);
} });
`;

beforeAll(async () => {
  server = await startTestServer({ toolsDir: finqaToolsDir({ 'slow.ts': SLOW }), gradersDir: unitsDir({ 'answer_match.ts': reexport('graders/answer_match.ts') }) });
  ({ rows, dataset, work } = await prepareFinqa(server, 2));
});

afterAll(async () => {
  await server?.close();
  removeTempDirs();
});

async function withModel<T>(script: Script, fn: (baseURL: string, requests: Awaited<ReturnType<typeof startScriptedModel>>['requests']) => Promise<T>, latencyMs = 0): Promise<T> {
  const model = await startScriptedModel({ script, latencyMs });
  try {
    return await fn(model.baseURL, model.requests);
  } finally {
    await model.close();
  }
}

const args = (baseURL: string, out: string, file = dataset) => ['rollout', '--dataset', file, '--server', server.url, '--key', server.key, '--model', 'scripted', '--base-url', baseURL, '--out', out];

describe('rollout behaviour', () => {
  const MiB = 1024 * 1024;
  it.each([
    ['chunked', false],
    ['with its Content-Length declared', true],
  ])('aborts a model reply (%s) past --max-reply-bytes, reading no more of it, and discards that rollout with a code', async (_, declareLength) => {
    const out = join(work, `flood-${String(declareLength)}.jsonl`);
    // 128 MiB a reply: enough that a read to the end is seen (and not slow), small enough for a shared machine.
    const model = await startScriptedModel({ script: [], flood: { bytes: 128 * MiB, declareLength } });
    try {
      const r = await runCli([...args(model.baseURL, out), '--api', 'responses', '--concurrency', '2', '--max-reply-bytes', String(MiB)]);
      expect(r.code, r.stderr).toBe(1); // every rollout discarded
      expect(r.stderr).toContain('RFT_ERR_MODEL_REPLY_TOO_LARGE');
      const results = readJsonl<RolloutResult>(out);
      expect(results).toHaveLength(rows.length);
      for (const x of results) expect(x).toMatchObject({ discarded: true, error_code: 'RFT_ERR_MODEL_REPLY_TOO_LARGE', steps: 0 });
      // One request per rollout (a capped reply is not retried), each cut off by the CLI soon after the
      // cap: what was written is the cap plus the sockets' buffers (4-6 MiB here), far from the 128 MiB offered.
      expect(model.requests).toHaveLength(rows.length);
      await waitFor('the model server to see every flooded connection end', () => (model.floods.length === rows.length ? true : undefined));
      for (const f of model.floods) {
        expect(f.finished).toBe(false);
        expect(f.sent).toBeLessThan(24 * MiB);
      }
    } finally {
      await model.close();
    }
  }, 60_000);

  it('ends a rollout at --max-steps, still sending the last turn\'s calls, and says so', async () => {
    const out = join(work, 'steps.jsonl');
    await withModel(finqaScript(rows), async (url) => {
      expect((await runCli([...args(url, out), '--max-steps', '1'])).code).toBe(0);
    });
    for (const r of readJsonl<RolloutResult>(out)) expect(r).toMatchObject({ steps: 1, tool_calls: 2, max_steps_reached: true, discarded: false });
  });

  it('feeds a 4xx reply back to the model as the tool output, and the rollout goes on', async () => {
    const out = join(work, 'unknown-tool.jsonl');
    const script: Script = (ctx) => (ctx.turn === 0 ? { calls: [{ name: 'no_such_tool', arguments: {} }] } : { text: `Answer: ${ctx.toolOutputs[0]?.slice(0, 40)}` });
    await withModel(script, async (url, requests) => {
      expect((await runCli(args(url, out))).code).toBe(0);
      const second = requests.find((q) => JSON.stringify(q.body.input).includes('function_call_output'))!;
      const fed = (second.body.input as { type?: string; output?: string }[]).find((i) => i.type === 'function_call_output')!;
      expect(JSON.parse(fed.output!)).toMatchObject({ error: { code: 'RFT_ERR_UNKNOWN_TOOL' } });
    });
    for (const r of readJsonl<RolloutResult>(out)) expect(r).toMatchObject({ discarded: false, steps: 2, tool_calls: 1 });
  });

  it('reports rollouts whose tool budget ran out', async () => {
    const out = join(work, 'budget.jsonl');
    const tight = join(work, 'tight.jsonl');
    writeJsonl(tight, rows.map((r) => ({ ...r, tool_budget: 2 })));
    await withModel(finqaScript(rows), async (url) => {
      expect((await runCli(args(url, out, tight))).code).toBe(0);
    });
    expect(readJsonl<RolloutResult>(out).every((r) => r.budget_exhausted === true)).toBe(true);
    const report = await runCli(['report', out]);
    expect(report.stdout).toMatch(/budget exhausted\s+100\.0%/);
  });

  it('finishes the rollouts in flight on Ctrl-C, starts no more, and exits 130', async () => {
    const out = join(work, 'sigint.jsonl');
    await withModel(
      finqaScript(rows),
      async (url) => {
        const { code, stdout } = await signalAfterLines(spawnCli([...args(url, out), '-k', '4', '--concurrency', '2']), out, 1, 'SIGINT');
        expect(code).toBe(130);
        expect(stdout).toContain('run the same command again to resume');
      },
      // Model turns of 400 ms: when the first line is written, seconds of work are left for the
      // other seven rollouts (with 150 ms, under two: a stall of the test's 20-ms poll that long on
      // a loaded machine let them all finish before the signal).
      400,
    );
    const results = readJsonl<RolloutResult>(out);
    expect(results.length).toBeLessThan(8);
    // Every rollout that was started got graded and written: none was cut off.
    const listed = await getJson<{ rollouts: { trace_id: string; last_score: number | null }[] }>(server, '/v1/rollouts?limit=500');
    const mine = new Set(results.map((r) => r.trace_id));
    const started = listed.rollouts.filter((r) => mine.has(r.trace_id));
    expect(started).toHaveLength(results.length);
    expect(started.every((r) => r.last_score !== null)).toBe(true);
  });

  it('sends the parallel calls of one turn at the same time, and replay sends them together again', async () => {
    const out = join(work, 'parallel.jsonl');
    const script: Script = (ctx) => (ctx.turn === 0 ? { calls: [{ name: 'slow', arguments: {} }, { name: 'slow', arguments: { prefix: 'b' } }] } : { text: 'Answer: 1' });
    await withModel(script, async (url) => {
      expect((await runCli([...args(url, out), '--max-steps', '3'])).code).toBe(0);
    });
    const [first] = readJsonl<RolloutResult>(out);
    const rec = await getJson<{ calls: { started_at: string; finished_at: string }[] }>(server, `/v1/rollouts/${first!.trace_id}`);
    const [a, b] = rec.calls.map((c) => [Date.parse(c.started_at), Date.parse(c.finished_at)] as const);
    expect(Math.max(a![0], b![0])).toBeLessThan(Math.min(a![1], b![1])); // the intervals overlap
    const replay = await runCli(['replay', first!.trace_id, '--server', server.url, '--key', server.key]);
    expect(replay.stdout).toContain('2 calls in 1 groups');
    expect(replay.code).toBe(0);
  });

  it('finds the model through OPENAI_BASE_URL and OPENAI_API_KEY when --base-url is not given', async () => {
    const out = join(work, 'env.jsonl');
    await withModel(finqaScript(rows), async (url, requests) => {
      const argv = args(url, out).filter((a, i, all) => a !== '--base-url' && all[i - 1] !== '--base-url');
      const r = await runCli(argv, { OPENAI_BASE_URL: url, OPENAI_API_KEY: 'sk-test-env' });
      expect(r.code).toBe(0);
      expect(requests.length).toBe(rows.length * 3);
      expect(requests.every((q) => q.authorization === 'Bearer sk-test-env')).toBe(true);
    });
    expect(readJsonl<RolloutResult>(out).every((r) => r.score !== null)).toBe(true);
  });

  it('refuses a bad option with RFT_ERR_CLI_USAGE and exit code 2', async () => {
    const r = await runCli([...args('http://127.0.0.1:9/v1', join(work, 'x.jsonl')), '-k', '0']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('RFT_ERR_CLI_USAGE');
  });

  it('refuses a dataset row without messages with RFT_ERR_DATASET naming the line', async () => {
    const bad = join(work, 'bad.jsonl');
    writeJsonl(bad, [rows[0], { tools: [] }]);
    const r = await runCli(args('http://127.0.0.1:9/v1', join(work, 'y.jsonl'), bad));
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/RFT_ERR_DATASET.*bad\.jsonl:2/);
  });
});
