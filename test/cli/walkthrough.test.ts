// A new user's first hour (issue 39), from a fresh checkout: `init` a blank project, `npm install`
// (offline: the project links this checkout), replace its example tool and grader with units of other
// names, rewrite its dataset (train.jsonl, the scripted model's scripted.jsonl) for them and add a split of
// its own (hard.jsonl), run the project's type check, `npm start`, check both splits against the units, then
// the scripted model through Agent RFT and NeMo Gym (`rollout`, `--door nemo-gym`) and the same answers
// through ORS and OpenEnv (the clients of test/helpers), each graded by the new grader with the right reward.
// Nothing is edited but the unit files and the dataset: job.json, package.json and the rest stay as init
// wrote them. On 3ce6ecd (before h/ctxtypes and h/envserves) the project had no `npm run typecheck`, and
// ORS and OpenEnv answered RFT_ERR_UNKNOWN_ENVIRONMENT: job.json still named the example's units.
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RolloutResult } from '../../src/cli/rollout/run.js';
import { spawnServer, type ChildServer } from '../helpers/child-server.js';
import { freePort } from '../helpers/containers.js';
import { EnvClient } from '../helpers/openenv-client.js';
import { OrsClient } from '../helpers/ors-client.js';
import { readJsonl, removeTempDirs, runCli, tempDir, writeJsonl } from './harness.js';

const NAME = 'stockroom';

const SHELF: Record<string, number> = { 'K-1': 7, 'K-2': 0, 'K-3': 42, 'K-4': 5 };

// The user's own tool and grader, under names the example never used.
const TOOL = `import { defineTool, errors, z } from 'rft-endpoints';

const SHELF: Record<string, number> = ${JSON.stringify(SHELF)};

export default defineTool({
  name: 'count_stock',
  idempotent: true,
  description: 'Units of a product on the shelf, by code.',
  parameters: z.object({ code: z.string().describe('the product code, e.g. "K-1"') }),
  async handler({ code }) {
    const id = code.trim().toUpperCase();
    const units = SHELF[id];
    if (units === undefined) throw errors.toolInput(\`no product "\${code}"\`);
    return { code: id, units };
  },
});
`;
const GRADER = `import { defineGrader, z } from 'rft-endpoints';

export default defineGrader({
  name: 'units_exact',
  description: '1 when the last integer of the answer is expected_units, else 0.',
  itemSchema: z.looseObject({ expected_units: z.number().int() }),
  async handler({ sample, item }) {
    const last = (sample.output_text ?? '').match(/-?\\d+/g)?.at(-1);
    const score = last !== undefined && Number(last) === item.expected_units ? 1 : 0;
    return { score, explanation: \`answered \${last ?? 'nothing'}, expected \${item.expected_units}\` };
  },
});
`;

const TOOLS = [
  {
    type: 'function',
    function: {
      name: 'count_stock',
      description: 'Units of a product on the shelf, by code.',
      parameters: { type: 'object', properties: { code: { type: 'string', description: 'the product code, e.g. "K-1"' } }, required: ['code'] },
    },
  },
];
interface Task {
  question: string;
  codes: string[];
  expected: number;
}
const row = (t: Task) => ({
  messages: [
    { role: 'system', content: 'You answer questions about the stockroom with count_stock. End with "Answer: <number>".' },
    { role: 'user', content: t.question },
  ],
  tools: TOOLS,
  expected_units: t.expected,
});
const CODES = Object.keys(SHELF);
const total = (codes: string[]) => codes.reduce((n, c) => n + SHELF[c]!, 0);
const ask = (codes: string[]): Task => ({ question: `How many units of ${codes.join(' and ')} are on the shelf together?`, codes, expected: total(codes) });
// Ten rows each (Agent RFT's least for a training file, which `dataset check` holds them to): train
// asks for one product or two, hard for three, four, or two added to one more.
const SPLITS: Record<'train' | 'hard', Task[]> = {
  train: [...CODES.map((c) => [c]), ...CODES.flatMap((a, i) => CODES.slice(i + 1).map((b) => [a, b]))].map(ask),
  hard: [
    ...CODES.map((c) => CODES.filter((x) => x !== c)).map(ask),
    ask(CODES),
    ...CODES.map((c) => ({ question: `How many units of ${c} would there be after one more arrives?`, codes: [c], expected: SHELF[c]! + 1 })),
    ask(['K-3', 'K-1']),
  ],
};
/** The scripted model (docs/emulator.md): each row's first try looks the codes up and answers right, its second answers 0 blind. */
const script = (tasks: Task[]) =>
  tasks.map((t, i) => ({
    row: i,
    tries: [[{ calls: t.codes.map((code) => ({ name: 'count_stock', arguments: { code } })) }, { text: `Answer: ${t.expected}` }], [{ text: 'Answer: 0' }]],
  }));
/** Each row's two tries, by tool calls: [tool calls, score]. */
const expectedScores = (tasks: Task[]) =>
  tasks.map((t) => [
    [0, t.expected === 0 ? 1 : 0],
    [t.codes.length, 1],
  ]);

const npm = (args: string[], cwd: string) =>
  spawnSync('npm', [...args, '--no-audit', '--no-fund', '--loglevel=error'], { cwd, encoding: 'utf8', env: { ...process.env, npm_config_update_notifier: 'false' }, timeout: 300_000 });

let dir: string;
let work: string;
let server: ChildServer | undefined;
let gymPort: number;
let privatePort: number;
let key: string;

afterAll(async () => {
  await server?.stop();
  removeTempDirs();
});

/** The project's own CLI, as `npx rft-endpoints` runs it: no model, no model key in its environment. */
const cli = (args: string[]) =>
  spawnSync(process.execPath, [join(dir, 'node_modules/.bin/rft-endpoints'), ...args], {
    cwd: dir,
    encoding: 'utf8',
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', RFT_API_KEY: key },
    timeout: 180_000,
  });

function scriptedRollout(split: 'train' | 'hard', door: string[], out: string) {
  // train's script is the project's own scripted.jsonl (the README's rehearsal); hard's is kept outside
  // the folder, where it is no split.
  const scriptFile = split === 'train' ? 'scripted.jsonl' : join(work, 'hard.scripted.jsonl');
  const r = cli(['rollout', '--dataset', `${split}.jsonl`, '--model', `scripted:${scriptFile}`, '-k', '2', '--out', out, '--server', server!.url, ...door]);
  expect(r.stderr).not.toMatch(/RFT_ERR/);
  expect(r.status, r.stderr).toBe(0);
  const results = readJsonl<RolloutResult>(out);
  expect(results).toHaveLength(SPLITS[split].length * 2);
  const got = SPLITS[split].map((_, i) =>
    results
      .filter((x) => x.row === i)
      .sort((a, b) => a.tool_calls - b.tool_calls)
      .map((x) => [x.tool_calls, x.score]),
  );
  expect(results.every((x) => !x.discarded)).toBe(true);
  expect(got).toEqual(expectedScores(SPLITS[split]));
}

describe("a new user's first hour: a blank project made one's own", () => {
  beforeAll(async () => {
    work = tempDir('rft-walkthrough-');
    dir = join(work, NAME);
    const init = await runCli(['init', dir, '--example', 'blank']);
    expect(init.code, init.stderr).toBe(0);
    const install = npm(['install', '--offline'], dir);
    expect(install.status, install.stderr).toBe(0);

    // The unit files: the example's out, the user's in.
    for (const f of readdirSync(join(dir, 'tools'))) rmSync(join(dir, 'tools', f), { recursive: true });
    for (const f of readdirSync(join(dir, 'graders'))) rmSync(join(dir, 'graders', f), { recursive: true });
    writeFileSync(join(dir, 'tools/count_stock.ts'), TOOL);
    writeFileSync(join(dir, 'graders/units_exact.ts'), GRADER);
    // The dataset: train.jsonl rewritten for them, and a split of the user's own.
    writeJsonl(join(dir, 'train.jsonl'), SPLITS.train.map(row));
    writeJsonl(join(dir, 'hard.jsonl'), SPLITS.hard.map(row));
    writeJsonl(join(dir, 'scripted.jsonl'), script(SPLITS.train));
    writeJsonl(join(work, 'hard.scripted.jsonl'), script(SPLITS.hard));
    rmSync(join(dir, 'valid.jsonl'), { force: true });

    gymPort = await freePort();
    privatePort = await freePort();
    server = await spawnServer(
      { RFT_DATA_DIR: join(dir, 'data'), RFT_NEMO_GYM_PORT: String(gymPort), RFT_PRIVATE_PORT: String(privatePort) },
      { command: ['npm', 'start', '--silent'], cwd: dir, timeoutMs: 120_000 },
    );
    key = readFileSync(join(dir, 'data/api-key'), 'utf8').trim();
  }, 420_000);

  it('the project type-checks its units with `npm run typecheck`', () => {
    const r = npm(['run', 'typecheck', '--silent'], dir);
    expect(r.status, `${r.stdout}${r.stderr}`).toBe(0);
  }, 180_000);

  it('serves the new tool and grader, and nothing of the example', async () => {
    const get = async (path: string) => (await fetch(`${server!.url}${path}`, { headers: { authorization: `Bearer ${key}` } })).json() as Promise<Record<string, unknown>>;
    expect(((await get('/v1/tools')).tools as { function: { name: string } }[]).map((t) => t.function.name)).toEqual(['count_stock']);
    expect(server!.stderr()).toMatch(/listening on .* \(1 tools?, 1 graders?/);
  });

  it('`dataset check` passes both splits against the new units', () => {
    for (const split of ['train', 'hard'] as const) {
      const r = cli(['dataset', 'check', `${split}.jsonl`]);
      expect(r.stdout, r.stderr).toMatch(new RegExp(`${split}\\.jsonl: 10 rows, 10 ok, 0 with problems; 0 problems.*grader units_exact`));
      expect(r.status).toBe(0);
    }
  }, 180_000);

  it('Agent RFT: the scripted model over train.jsonl and hard.jsonl, graded by the new grader (/grade)', () => {
    scriptedRollout('train', [], join(work, 'agent-rft-train.jsonl'));
    scriptedRollout('hard', [], join(work, 'agent-rft-hard.jsonl'));
  }, 300_000);

  it('NeMo Gym: the same script through the NeMo Gym door, as simple_agent plays it', () => {
    scriptedRollout('train', ['--door', 'nemo-gym', '--door-url', `http://127.0.0.1:${gymPort}`], join(work, 'gym-train.jsonl'));
    scriptedRollout('hard', ['--door', 'nemo-gym', '--door-url', `http://127.0.0.1:${gymPort}`], join(work, 'gym-hard.jsonl'));
  }, 300_000);

  it('ORS: the environment named after the folder, both splits, rewards from the new grader', async () => {
    const ors = new OrsClient(server!.url, { token: key, waitScale: 0.01 });
    expect(await ors.listSplits(NAME)).toEqual(expect.arrayContaining(['train', 'hard']));
    for (const split of ['train', 'hard'] as const) {
      for (const [index, t] of SPLITS[split].entries()) {
        for (const answer of [t.expected, t.expected + 1]) {
          await ors.session(NAME, { split, index }, async (s) => {
            expect((await s.listTools()).map((x) => x.name)).toEqual(['count_stock', 'submit']);
            for (const code of t.codes) expect((await s.callTool('count_stock', { code })).finished).toBe(false);
            const out = await s.callTool('submit', { answer: `Answer: ${answer}` });
            expect(out.finished).toBe(true);
            expect(out.reward, `${split}[${index}] answered ${answer}`).toBe(answer === t.expected ? 1 : 0);
          });
        }
      }
    }
  }, 180_000);

  it('OpenEnv: reset by split and index on the private listener, rewards from the new grader', async () => {
    for (const split of ['train', 'hard'] as const) {
      for (const [index, t] of SPLITS[split].entries()) {
        for (const answer of [t.expected, t.expected + 1]) {
          const env = await new EnvClient(`http://127.0.0.1:${privatePort}/${NAME}`).connect();
          try {
            expect((await env.reset({ split, index })).done).toBe(false);
            expect((await env.listTools()).map((x) => x.name)).toEqual(['count_stock', 'submit']);
            for (const code of t.codes) expect(JSON.stringify(await env.callTool('count_stock', { code }))).toContain(code);
            const done = await env.step({ type: 'call_tool', tool_name: 'submit', arguments: { answer: `Answer: ${answer}` } });
            expect(done.done).toBe(true);
            expect(done.reward, `${split}[${index}] answered ${answer}`).toBe(answer === t.expected ? 1 : 0);
          } finally {
            await env.close();
          }
        }
      }
    }
  }, 180_000);
});
