// An environment is what the project serves. A user replaced the blank example's tool and grader: its
// job.json still named lookup_price and price_match, the environment was left out with a warning, and
// ORS listed no environment and OpenEnv answered RFT_ERR_UNKNOWN_ENVIRONMENT while Agent RFT worked.
// Its datasets had to be train.jsonl or valid.jsonl and were read once: an edit needed a restart.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cpSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pino, type Logger } from 'pino';
import { repoRoot, startTestServer, type TestServer } from '../helpers/server.js';
import { OrsClient } from '../helpers/ors-client.js';
import { EnvClient } from '../helpers/openenv-client.js';
import { reexport, removeTempDirs, tempDir } from '../cli/harness.js';
import { errors, type RftError } from '../../src/errors.js';
import { EXIT, exitStatusOf } from '../../src/cli/exit-codes.js';

const row = (text: string) => JSON.stringify({ messages: [{ role: 'user', content: text }], reference_answer: text });
const rows = (...texts: string[]) => texts.map((t) => `${row(t)}\n`).join('');

/** A project as `init --example blank` makes it, its tool and grader replaced by echo and exact. */
function project(job: unknown): string {
  const dir = join(tempDir('rft-project-'), 'my-agent');
  mkdirSync(join(dir, 'tools'), { recursive: true });
  mkdirSync(join(dir, 'graders'));
  writeFileSync(join(dir, 'tools/echo.ts'), reexport('test/fixtures/units/tools/echo.ts'));
  writeFileSync(join(dir, 'graders/exact.ts'), reexport('test/fixtures/units/graders/exact.ts'));
  writeFileSync(join(dir, 'job.json'), JSON.stringify(job, null, 2));
  writeFileSync(join(dir, 'train.jsonl'), rows('train 0', 'train 1'));
  return dir;
}

const blankJob = JSON.parse(readFileSync(join(repoRoot, 'examples/blank/job.json'), 'utf8')) as { method: { reinforcement: Record<string, unknown> } };
/** The blank job without units, as init writes it now. */
const settingsOnly = (() => {
  const job = structuredClone(blankJob);
  const r = job.method.reinforcement as { tools?: unknown; grader: Record<string, unknown> };
  delete r.tools;
  for (const k of ['name', 'url', 'headers']) delete r.grader[k];
  return job;
})();

const start = (dir: string, logger?: Logger) =>
  startTestServer({
    toolsDir: join(dir, 'tools'),
    gradersDir: join(dir, 'graders'),
    env: { RFT_ENVIRONMENTS: dir, RFT_PRIVATE_PORT: '0', RFT_SQLITE_SYNC: 'normal' },
    ...(logger ? { logger } : {}),
  });

afterAll(() => removeTempDirs());

describe("a project's job.json", () => {
  it('naming a tool and a grader the project no longer has stops the boot with RFT_ERR_JOB_UNITS, naming job.json and them', async () => {
    const dir = project(blankJob);
    const err = (await start(dir).catch((e: unknown) => e)) as RftError;
    expect(err).toMatchObject({ code: 'RFT_ERR_JOB_UNITS', details: { file: join(dir, 'job.json'), missing_tools: ['lookup_price'], missing_graders: ['price_match'] } });
    expect(err.message).toContain(join(dir, 'job.json'));
    expect(err.message).toContain('"lookup_price"');
    expect(exitStatusOf(err)).toBe(EXIT.usage);
    expect(errors.jobUnits.code).toBe('RFT_ERR_JOB_UNITS');
  });

  it('naming units it has serves those; naming one it lacks among them is still an error, never a silent drop', async () => {
    const named = structuredClone(blankJob);
    named.method.reinforcement.tools = [{ name: 'echo' }, { name: 'peek' }];
    named.method.reinforcement.grader = { type: 'endpoint', name: 'exact' };
    await expect(start(project(named))).rejects.toMatchObject({ code: 'RFT_ERR_JOB_UNITS', details: { missing_tools: ['peek'], missing_graders: [] } });
  });
});

describe('a project whose job.json names no units (as init writes it) serves its tools and grader on every door', () => {
  let dir: string;
  let server: TestServer;
  let ors: OrsClient;
  const logged: { msg?: string; code?: string; split?: string }[] = [];
  const openenv = async (data: Record<string, unknown>) => {
    const env = await new EnvClient(`${server.app.rft.privateDoors!.url}/my-agent`).connect();
    try {
      return await env.reset(data);
    } finally {
      await env.close();
    }
  };
  const firstMessage = (r: { observation: Record<string, unknown> }) => (r.observation.messages as { content: string }[])[0]!.content;
  /** Polls until `f` gives what `ok` accepts (a file's change is served once it settles, after SETTLE_MS). */
  const until = async <T>(f: () => Promise<T>, ok: (v: T) => boolean): Promise<T> => {
    const deadline = Date.now() + 20_000;
    for (;;) {
      const v = await f();
      if (ok(v) || Date.now() > deadline) return v;
      await new Promise((r) => setTimeout(r, 50));
    }
  };

  beforeAll(async () => {
    dir = project(settingsOnly);
    const logger = pino({ level: 'debug' }, { write: (line: string) => void logged.push(JSON.parse(line) as (typeof logged)[number]) });
    server = await start(dir, logger);
    ors = new OrsClient(server.url, { token: server.key, waitScale: 0.01 });
  });
  afterAll(() => server?.close());

  it('ORS lists it with the new tool, and OpenEnv resets on its rows', async () => {
    expect(await ors.request('GET', '/list_environments')).toEqual(['my-agent']);
    expect((await ors.request('GET', '/my-agent/tools')) as { tools: { name: string }[] }).toMatchObject({ tools: [{ name: 'echo' }, { name: 'submit' }] });
    const reset = await openenv({ split: 'train', index: 1 });
    expect(reset.done).toBe(false);
    expect(firstMessage(reset)).toBe('train 1');
  });

  it('serves a new hard.jsonl as split "hard" on ORS and OpenEnv, without a restart', async () => {
    writeFileSync(join(dir, 'hard.jsonl'), rows('hard 0', 'hard 1', 'hard 2'));
    expect(await ors.listSplits('my-agent')).toEqual(['train', 'hard']);
    expect(await ors.request('GET', '/my-agent/splits')).toEqual([{ name: 'train', type: 'train' }, { name: 'hard', type: 'test' }]);
    expect(await ors.numTasks('my-agent', 'hard')).toBe(3);
    expect(firstMessage(await openenv({ split: 'hard', index: 2 }))).toBe('hard 2');
  });

  it('serves an edited train.jsonl without a restart; a half-written or bad one keeps the rows last read and logs a coded error', async () => {
    expect(await ors.numTasks('my-agent', 'train')).toBe(2);
    writeFileSync(join(dir, 'train.jsonl'), rows('edited 0', 'edited 1', 'edited 2'));
    expect(await until(() => ors.numTasks('my-agent', 'train'), (n) => n === 3)).toBe(3);
    expect(firstMessage(await openenv({ split: 'train', index: 0 }))).toBe('edited 0');

    // Cut mid-row, as a writer in progress leaves it.
    const whole = rows('cut 0', 'cut 1', 'cut 2', 'cut 3');
    writeFileSync(join(dir, 'train.jsonl'), whole.slice(0, whole.length - 20));
    const kept = (l: (typeof logged)[number]) => l.code === 'RFT_ERR_ENVIRONMENT_LOAD' && l.split === 'train';
    await until(async () => (await ors.numTasks('my-agent', 'train'), logged.some(kept)), Boolean);
    expect(logged.filter(kept)).toHaveLength(1);
    expect(await ors.numTasks('my-agent', 'train')).toBe(3);
    expect(firstMessage(await openenv({ split: 'train', index: 0 }))).toBe('edited 0');

    // Finished (written beside it and renamed into place): served.
    writeFileSync(join(dir, '.train.tmp'), whole);
    renameSync(join(dir, '.train.tmp'), join(dir, 'train.jsonl'));
    expect(await until(() => ors.numTasks('my-agent', 'train'), (n) => n === 4)).toBe(4);
    expect(firstMessage(await openenv({ split: 'train', index: 3 }))).toBe('cut 3');
  });

  it('does not take the project\'s scripted.jsonl or a rollout\'s results for splits', async () => {
    cpSync(join(repoRoot, 'examples/blank/scripted.jsonl'), join(dir, 'scripted.jsonl'));
    writeFileSync(join(dir, 'rehearsal.jsonl'), `${JSON.stringify({ row: 0, try: 0, score: 1 })}\n`);
    expect(await ors.listSplits('my-agent')).toEqual(['train', 'hard']);
  });
});
