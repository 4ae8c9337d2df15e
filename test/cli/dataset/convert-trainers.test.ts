// `dataset convert --to trl|verl|slime|openrlhf`: the shipped finqa splits, read back with the trainers'
// own loaders (datasets' json and parquet loaders, pyarrow: test/cli/dataset/trainer-loaders.py), keep
// each row's conversation and grading fields, and train through this server's door for that trainer:
// TRL's rows reset the OpenEnv door onto the same row, slime's and OpenRLHF's labels (and verl's ground
// truth, posted as its custom reward function does) get the reward door's scores for the row's answer.
// Rows the format or the door cannot carry stop the conversion with their line.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gradeThroughApi } from '../../helpers/agent-rft.js';
import { EnvClient } from '../../helpers/openenv-client.js';
import { openRlhfFetchRewards, slimeRemoteRm } from '../../helpers/reward-clients.js';
import { describeIf } from '../../helpers/require.js';
import { startTestServer, type TestServer } from '../../helpers/server.js';
import { readJsonl, removeTempDirs, repoRoot, runCli, tempDir } from '../harness.js';

type Row = Record<string, unknown>;
type Message = { role: string; content: string };

/** The Python that has pyarrow and datasets: RFT_TEST_PYTHON (CI: .ci/setup-python.sh), else python3. */
const python = process.env.RFT_TEST_PYTHON || 'python3';
const LOADERS = join(repoRoot, 'test/cli/dataset/trainer-loaders.py');
const probe = spawnSync(python, [LOADERS, 'check'], { encoding: 'utf8' });
const hasLoaders = probe.status === 0;
const probeError = (probe.stderr || probe.error?.message || '').trim().split('\n').at(-1);

/** The rows as the trainer's loader yields them. */
function load(kind: 'json' | 'parquet', file: string): Row[] {
  const r = spawnSync(python, [LOADERS, kind, file, tempDir('rft-hf-cache-')], {
    encoding: 'utf8',
    env: { PATH: process.env.PATH ?? '', HOME: tempDir('rft-hf-home-'), HF_HUB_OFFLINE: '1', HF_DATASETS_OFFLINE: '1' },
  });
  expect(r.status, r.stderr).toBe(0);
  return r.stdout.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as Row);
}

/** Python run asynchronously: the server under test answers in this process meanwhile. */
function runPython(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(python, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { PATH: process.env.PATH ?? '', NO_PROXY: '*' } });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}

const fieldsOf = ({ messages: _m, tools: _t, ...fields }: Row): Row => fields;
const promptOf = (row: Row): Message[] => (row.messages as Message[]).map((m) => ({ role: m.role, content: m.content }));
const source = (file: string) => readJsonl<Row>(join(repoRoot, file));
/** A right answer and a wrong one. */
const answersOf = (row: Row) => [`Answer: ${String(row.reference_answer)}`, 'Answer: 17'];

async function convert(file: string, to: string, ext = 'jsonl', extra: string[] = []): Promise<string> {
  const out = join(tempDir(), `out.${ext}`);
  const r = await runCli(['dataset', 'convert', file, '--to', to, '--out', out, ...extra]);
  expect(r.stderr).toBe(`${file}: ${source(file).length} rows converted to ${to} in ${out}\n`);
  expect(r.code).toBe(0);
  return out;
}

describeIf(hasLoaders, 'dataset convert read back by the trainers\' loaders', `${python} has no pyarrow and datasets: ${probeError}`)(
  'dataset convert for TRL, verl, slime and OpenRLHF on the shipped finqa splits',
  { timeout: 180_000 },
  () => {
    let server: TestServer;
    let door: string;
    beforeAll(async () => {
      server = await startTestServer({ env: { RFT_PRIVATE_PORT: '0', RFT_SQLITE_SYNC: 'normal' } });
      door = server.app.rft.privateDoors!.url;
    });
    afterAll(async () => {
      await server?.close();
      removeTempDirs();
    });

    it.each(['slime', 'openrlhf'] as const)('%s: prompt and label (the grading fields as JSON text) through datasets, graded by the reward door', async (to) => {
      const file = 'examples/finqa/train.jsonl';
      const rows = source(file);
      const out = await convert(file, to);
      const loaded = load('json', out);
      expect(loaded).toHaveLength(rows.length);
      const scores = new Set<number>();
      for (const [i, got] of loaded.entries()) {
        const row = rows[i]!;
        expect(Object.keys(got).sort()).toEqual(['label', 'prompt']);
        expect(got.prompt).toEqual(promptOf(row));
        expect(JSON.parse(got.label as string)).toEqual(fieldsOf(row));
        if (i % 5 !== 0) continue;
        for (const answer of answersOf(row)) {
          const expected = await gradeThroughApi(server, fieldsOf(row), answer);
          if (to === 'slime') {
            const run = await slimeRemoteRm(`${door}/reward/answer_match`, { prompt: got.prompt, response: answer, label: got.label });
            expect(run.statuses).toEqual([200]);
            expect(run.result).toBe(expected);
          } else {
            const prompt = (got.prompt as Message[]).map((m) => `<|im_start|>${m.role}\n${m.content}<|im_end|>\n`).join('') + '<|im_start|>assistant\n';
            const run = await openRlhfFetchRewards(`${door}/reward/answer_match`, [`${prompt}${answer}<|im_end|>`], [prompt], [got.label]);
            expect(run.statuses).toEqual([200]);
            expect(run.result!.rewards).toEqual([expected]);
          }
          scores.add(expected);
        }
      }
      expect(scores).toEqual(new Set([0, 1]));
    });

    it('verl: parquet that pyarrow and datasets read alike, its ground truth graded by the reward door', async () => {
      for (const file of ['examples/finqa/train.jsonl', 'examples/finqa/valid.jsonl']) {
        const rows = source(file);
        const loaded = load('parquet', await convert(file, 'verl', 'parquet'));
        expect(loaded).toHaveLength(rows.length);
        for (const [i, got] of loaded.entries()) {
          const row = rows[i]!;
          const truth = (got.reward_model as { ground_truth: string }).ground_truth;
          expect({ ...got, reward_model: { ...(got.reward_model as Row), ground_truth: JSON.parse(truth) as unknown } }).toEqual({
            data_source: 'finqa',
            prompt: promptOf(row),
            ability: 'agent',
            reward_model: { style: 'rule', ground_truth: fieldsOf(row) },
            extra_info: { index: i },
          });
          // The documented custom reward function: compute_score posts {response, label: ground_truth}.
          if (i % 5 !== 0) continue;
          for (const answer of answersOf(row)) {
            const run = await slimeRemoteRm(`${door}/reward/answer_match`, { prompt: null, response: answer, label: truth });
            expect(run.result).toBe(await gradeThroughApi(server, fieldsOf(row), answer));
          }
        }
      }
      // The README's rft_reward.py, as verl calls it, on a right and a wrong answer of a converted row.
      const snippet = /verl's `rft_reward\.py`[\s\S]*?```python\n([\s\S]*?)```/.exec(readFileSync(join(repoRoot, 'README.md'), 'utf8'))![1]!;
      const module = join(tempDir(), 'rft_reward.py');
      writeFileSync(module, snippet.replace('http://127.0.0.1:8789', door));
      const [first] = load('parquet', await convert('examples/finqa/valid.jsonl', 'verl', 'parquet'));
      const truth = (first!.reward_model as { ground_truth: string }).ground_truth;
      const reference = String((JSON.parse(truth) as Row).reference_answer);
      const call = [
        'import importlib.util, json, sys',
        `spec = importlib.util.spec_from_file_location("rft_reward", ${JSON.stringify(module)})`,
        'm = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)',
        'args = json.loads(sys.argv[1])',
        'print(json.dumps([m.compute_score("finqa", answer, args["truth"], {"index": 0}) for answer in args["answers"]]))',
      ].join('\n');
      const r = await runPython(['-c', call, JSON.stringify({ truth, answers: [`Answer: ${reference}`, 'Answer: 17'] })]);
      expect(r.code, r.stderr).toBe(0);
      expect(JSON.parse(r.stdout)).toEqual([1, 0]);
      const named = load('parquet', await convert('examples/finqa/valid.jsonl', 'verl', 'parquet', ['--data-source', 'rft/finqa']));
      expect(new Set(named.map((r) => r.data_source))).toEqual(new Set(['rft/finqa']));
    });

    it('trl: prompt, split, index and the fields through datasets; each row resets the OpenEnv door onto itself', async () => {
      for (const [file, split] of [
        ['examples/finqa/train.jsonl', 'train'],
        ['examples/finqa/valid.jsonl', 'validation'],
      ] as const) {
        const rows = source(file);
        const loaded = load('json', await convert(file, 'trl'));
        expect(loaded).toHaveLength(rows.length);
        // datasets gives every row every column: a field another row has is null in this one.
        const columns = [...new Set(rows.flatMap((r) => Object.keys(fieldsOf(r))))];
        for (const [i, got] of loaded.entries()) {
          const row = rows[i]!;
          expect(got).toEqual({ prompt: promptOf(row), split, index: i, ...Object.fromEntries(columns.map((c) => [c, null])), ...fieldsOf(row) });
        }
        const env = await new EnvClient(`${door}/finqa`).connect();
        try {
          for (const got of loaded.filter((_, i) => i % 4 === 0)) {
            // The init'ed README's TRL environment: reset(split=..., index=...) with the row's columns.
            const reset = await env.reset({ split: got.split, index: got.index });
            expect(reset.observation.messages).toEqual(got.prompt);
            const row = rows[got.index as number]!;
            const submitted = await env.step({ type: 'call_tool', tool_name: 'submit', arguments: { answer: `Answer: ${String(got.reference_answer)}` } });
            expect(submitted.done).toBe(true);
            expect(submitted.reward).toBe(await gradeThroughApi(server, fieldsOf(row), `Answer: ${String(row.reference_answer)}`));
            expect(submitted.reward).toBe(1);
          }
        } finally {
          await env.close();
        }
      }
    });
  },
);

describe('dataset convert for TRL, verl, slime and OpenRLHF refuses what the format or the door cannot carry', { timeout: 60_000 }, () => {
  afterAll(removeTempDirs);
  const good = () => readFileSync(join(repoRoot, 'examples/finqa/valid.jsonl'), 'utf8').split('\n')[0]!;
  const user = [{ role: 'user', content: 'q' }];

  it.each([
    ['slime', 'a tool result in the prompt', JSON.stringify({ messages: [...user, { role: 'tool', tool_call_id: 'c', content: 'x' }], reference_answer: '1' }), /role "tool"/],
    ['openrlhf', 'an earlier tool call', JSON.stringify({ messages: [{ role: 'assistant', content: null, tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: '{}' } }] }, ...user] }), /calls tools/],
    ['slime', 'an image', JSON.stringify({ messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:,' } }] }] }), /is not a \{type: "text", text\} part/],
    ['openrlhf', 'a row graded on its sandbox', JSON.stringify({ messages: user, sandbox: { hidden: 'coding/tasks/x/hidden' } }), /sandbox/],
    ['trl', 'a field named like a TRL column', JSON.stringify({ messages: user, images: [] }), /"images"/],
    ['trl', 'a field of another type than on line 1', JSON.stringify({ ...(JSON.parse(good()) as Row), reference_answer: 48.6 }), /field "reference_answer" is number here and string on line 1/],
  ])('--to %s, %s: RFT_ERR_DATASET naming line 3, nothing written', async (to, _, bad, why) => {
    const dir = tempDir();
    const file = join(dir, 'bad.jsonl');
    writeFileSync(file, `${good()}\n\n${bad}\n${good()}\n`);
    const out = join(dir, 'out.jsonl');
    const r = await runCli(['dataset', 'convert', file, '--to', to, '--out', out, ...(to === 'trl' ? ['--split', 'train'] : [])]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(new RegExp(`^error RFT_ERR_DATASET: ${file}:3: .+\\n$`));
    expect(r.stderr).toMatch(why);
    expect(readdirSync(dir)).toEqual(['bad.jsonl']);
  });

  it('refuses the coding rows for the reward-only trainers, and takes them for TRL', async () => {
    const r = await runCli(['dataset', 'convert', 'examples/coding/train.jsonl', '--to', 'verl', '--out', join(tempDir(), 'x.parquet')]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^error RFT_ERR_DATASET: examples\/coding\/train.jsonl:1: the row names a sandbox/);
    const trl = await runCli(['dataset', 'convert', 'examples/coding/train.jsonl', '--to', 'trl']);
    expect(trl.code, trl.stderr).toBe(0);
    const rows = trl.stdout.trim().split('\n').map((l) => JSON.parse(l) as Row);
    expect(rows.map((r) => [r.split, r.index, r.task_id])).toEqual(source('examples/coding/train.jsonl').map((s, i) => ['train', i, s.task_id]));
  });

  it.each([
    [['--to', 'trl'], /--to trl needs --split/],
    [['--to', 'trl', '--split', 'no such/split'], /--split must be a split's name/],
    [['--to', 'verl'], /--to verl writes parquet: name the file with --out/],
    [['--to', 'slime', '--agent', 'a'], /--agent applies to --to nemo-gym only/],
    [['--to', 'openrlhf', '--split', 'train'], /--split applies to --to trl only/],
    [['--to', 'trl', '--split', 'train', '--data-source', 'x'], /--data-source applies to --to verl only/],
  ])('%j: RFT_ERR_CLI_USAGE, nothing written', async (args, why) => {
    const dir = tempDir();
    const file = join(dir, 'rows.jsonl');
    writeFileSync(file, `${good()}\n`);
    const r = await runCli(['dataset', 'convert', file, ...args]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^error RFT_ERR_CLI_USAGE: /);
    expect(r.stderr).toMatch(why);
    expect(r.stdout).toBe('');
    expect(existsSync(join(dir, 'out.jsonl'))).toBe(false);
  });
});
