// A folder of Harbor tasks into rows and splits (src/harbor/dataset.ts): a tree, dataset.toml,
// registry.json; invalid tasks reported with their codes, never dropped. No Docker.
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { HARBOR_TOOLS, harborRow, isHarborDataset, readHarborDataset } from '../../src/harbor/dataset.js';

const EXAMPLES = join(import.meta.dirname, '../../examples/harbor');
const INVALID = join(import.meta.dirname, '../fixtures/harbor-invalid');

const tmp: string[] = [];
afterEach(() => {
  for (const d of tmp.splice(0)) rmSync(d, { recursive: true, force: true });
});
function scratch(): string {
  const d = mkdtempSync(join(tmpdir(), 'harbor-ds-'));
  tmp.push(d);
  return d;
}

describe('a tree of task folders', () => {
  it('reads the examples: every task valid, in train', () => {
    const ds = readHarborDataset(EXAMPLES);
    expect(ds.invalid).toEqual([]);
    expect(ds.tasks.length).toBeGreaterThanOrEqual(11);
    expect(new Set(ds.tasks.map((t) => t.split))).toEqual(new Set(['train']));
  });

  it('reports every invalid folder with its code beside the valid one', () => {
    const ds = readHarborDataset(INVALID);
    expect(ds.tasks.map((t) => t.task.name)).toEqual(['valid']);
    expect(ds.invalid.map((i) => [i.dir.split('/').at(-1), i.code]).sort()).toEqual([
      ['bad-toml', 'RFT_ERR_HARBOR_TASK_TOML'],
      ['compose-sidecar', 'RFT_ERR_HARBOR_TASK_COMPOSE'],
      ['multi-step', 'RFT_ERR_HARBOR_TASK_MULTI_STEP'],
      ['no-image', 'RFT_ERR_HARBOR_TASK_FILES'],
      ['no-tests', 'RFT_ERR_HARBOR_TASK_FILES'],
      ['no-toml', 'RFT_ERR_HARBOR_TASK_TOML'],
    ]);
  });

  it('splits by sub-folder (tasks/ is train, valid/ is validation) and refuses a second task of the same name', () => {
    const d = scratch();
    cpSync(join(EXAMPLES, 'write-greeting'), join(d, 'tasks', 'write-greeting'), { recursive: true });
    cpSync(join(EXAMPLES, 'count-answers'), join(d, 'valid', 'count-answers'), { recursive: true });
    cpSync(join(EXAMPLES, 'fill-form'), join(d, 'hard', 'fill-form'), { recursive: true });
    cpSync(join(EXAMPLES, 'fill-form'), join(d, 'hard2', 'fill-form'), { recursive: true });
    const ds = readHarborDataset(d);
    expect(ds.tasks.map((t) => [t.split, t.task.name])).toEqual([
      ['hard', 'fill-form'],
      ['train', 'write-greeting'],
      ['validation', 'count-answers'],
    ]);
    expect(ds.invalid).toMatchObject([{ code: 'RFT_ERR_HARBOR_TASK_DUPLICATE', dir: join(d, 'hard2', 'fill-form') }]);
  });

  it('is recognised as a Harbor dataset only where its tasks are, not from a parent of its parent', () => {
    expect(isHarborDataset(EXAMPLES)).toBe(true);
    expect(isHarborDataset(join(EXAMPLES, 'write-greeting'))).toBe(false);
    const d = scratch();
    cpSync(join(EXAMPLES, 'write-greeting'), join(d, 'a', 'b', 'write-greeting'), { recursive: true });
    expect(isHarborDataset(d)).toBe(false);
    expect(isHarborDataset(join(d, 'a'))).toBe(true);
  });
});

describe('listings', () => {
  it('dataset.toml: its tasks found here by [task] name or folder name; one that is not here refused as remote', () => {
    const d = scratch();
    for (const t of ['write-greeting', 'count-answers', 'legacy-schema', 'fill-form']) cpSync(join(EXAMPLES, t), join(d, t), { recursive: true });
    const digest = `sha256:${'a'.repeat(64)}`;
    writeFileSync(
      join(d, 'dataset.toml'),
      `[dataset]\nname = "org/ds"\n\n[[tasks]]\nname = "fixtures/write-greeting"\ndigest = "${digest}"\n\n` +
        `[[tasks]]\nname = "someone/legacy-schema"\ndigest = "${digest}"\n\n[[tasks]]\nname = "org/elsewhere"\ndigest = "${digest}"\n`,
    );
    const ds = readHarborDataset(d);
    expect(ds.kind).toBe('dataset.toml');
    // Only what the listing names: fill-form and count-answers are in the folder, not in the dataset.
    expect(ds.tasks.map((t) => t.task.name)).toEqual(['write-greeting', 'legacy-schema']);
    expect(ds.invalid).toMatchObject([{ code: 'RFT_ERR_HARBOR_TASK_REMOTE', reason: expect.stringMatching(/org\/elsewhere/) }]);
  });

  it('registry.json: local paths only, a git URL refused, several datasets as splits', () => {
    const d = scratch();
    cpSync(join(EXAMPLES, 'write-greeting'), join(d, 'tasks', 'wg'), { recursive: true });
    cpSync(join(EXAMPLES, 'fill-form'), join(d, 'tasks', 'ff'), { recursive: true });
    writeFileSync(
      join(d, 'registry.json'),
      JSON.stringify([
        { name: 'easy', version: '1.0', tasks: [{ name: 'wg', path: 'tasks/wg' }, { name: 'far', git_url: 'https://example.invalid/x.git', path: 'x' }] },
        { name: 'hard', version: '1.0', tasks: [{ name: 'ff', path: 'tasks/ff' }, { name: 'out', path: '../../etc' }, { name: 'gone', path: 'tasks/gone' }] },
      ]),
    );
    const ds = readHarborDataset(d);
    expect(ds.tasks.map((t) => [t.split, t.task.name])).toEqual([
      ['easy', 'wg'],
      ['hard', 'ff'],
    ]);
    expect(ds.invalid.map((i) => i.code)).toEqual(['RFT_ERR_HARBOR_TASK_REMOTE', 'RFT_ERR_HARBOR_TASK_REMOTE', 'RFT_ERR_HARBOR_TASK_TOML']);
  });
});

describe('rows', () => {
  it("are the instruction as the user message, the harness tools, the task named for the sandbox, the task's name as id", () => {
    const ds = readHarborDataset(EXAMPLES);
    const task = ds.tasks.find((t) => t.task.name === 'write-greeting')!.task;
    const row = harborRow('harbor', task);
    expect(row).toEqual({
      id: 'write-greeting',
      messages: [{ role: 'user', content: task.instruction }],
      tools: [...HARBOR_TOOLS],
      sandbox: { harbor: 'harbor/write-greeting' },
      harbor: { agent_timeout_sec: 120 },
    });
  });

  it('carry [metadata] tool_budget when it is a non-negative integer', () => {
    const d = scratch();
    mkdirSync(d, { recursive: true });
    cpSync(join(EXAMPLES, 'prebuilt-image'), join(d, 't'), { recursive: true });
    writeFileSync(join(d, 't', 'task.toml'), '[metadata]\ntool_budget = 7\n[environment]\ndocker_image = "x"\n');
    const task = readHarborDataset(d).tasks[0]!.task;
    expect(harborRow('e', task)).toMatchObject({ tool_budget: 7 });
    writeFileSync(join(d, 't', 'task.toml'), '[metadata]\ntool_budget = -1\n[environment]\ndocker_image = "x"\n');
    expect(harborRow('e', readHarborDataset(d).tasks[0]!.task)).not.toHaveProperty('tool_budget');
  });
});
