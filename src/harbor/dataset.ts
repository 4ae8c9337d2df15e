// A folder of Harbor tasks as rows and splits (../shared/docs/harbor-tasks.md, section 5): a tree of
// task folders (tasks directly in the folder, or in `tasks/`, are the `train` split; tasks under any
// other sub-folder are the split named after it: `validation/`, `hard/`), or Harbor's listings:
// `dataset.toml` (tasks pinned as {name = "org/task", digest}: found by `[task] name` or folder name
// among the folder's own tasks) and `registry.json` (datasets of {name, path, git_url?}: local paths
// only). A task a listing names that is not here (a registry package, a git URL) is refused with
// RFT_ERR_HARBOR_TASK_REMOTE; every folder that is not a valid task is reported with its coded reason.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { parse as parseToml } from 'smol-toml';
import { z } from 'zod';
import { errors } from '../errors.js';
import { harborRef } from './registry.js';
import { looksLikeTask, readHarborTask } from './task.js';
import type { HarborInvalidTask, HarborTask } from './types.js';

/** The tools every Harbor row offers (docs/harbor.md, "The harness"): a shell and the file tools, in the task's workdir. */
export const HARBOR_TOOLS = ['shell', 'read_file', 'write_file', 'list_files'] as const;

export interface HarborDatasetTask {
  split: string;
  task: HarborTask;
}

export interface HarborDataset {
  /** The folder read. */
  root: string;
  /** How it was listed. */
  kind: 'tree' | 'dataset.toml' | 'registry.json';
  tasks: HarborDatasetTask[];
  invalid: HarborInvalidTask[];
}

/** How deep a tree is searched for task folders: tasks in the folder, or in its split folders. */
const MAX_DEPTH = 2;

/** A folder that is part of a task without being one: it has a task's files but no task.toml. */
function looksLikeBrokenTask(dir: string): boolean {
  return ['instruction.md', 'tests', 'environment', 'solution'].filter((f) => existsSync(join(dir, f))).length >= 2;
}

function subdirs(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .filter((e) => (e.isDirectory() || (e.isSymbolicLink() && statSync(join(dir, e.name), { throwIfNoEntry: false })?.isDirectory())) && !e.name.startsWith('.'))
    .map((e) => e.name)
    .sort();
}

/** A split's name from its folder: `tasks` (TRL's layout) is `train`, `valid` is `validation`. */
function splitOf(folder: string): string {
  return folder === 'tasks' ? 'train' : folder === 'valid' ? 'validation' : folder;
}

/** Does `dir` hold Harbor tasks (a listing, or a task folder within MAX_DEPTH)? */
export function isHarborDataset(dir: string): boolean {
  if (!statSync(dir, { throwIfNoEntry: false })?.isDirectory()) return false;
  if (existsSync(join(dir, 'dataset.toml')) || existsSync(join(dir, 'registry.json'))) return true;
  const walk = (d: string, depth: number): boolean =>
    depth <= MAX_DEPTH && subdirs(d).some((n) => looksLikeTask(join(d, n)) || (depth < MAX_DEPTH && walk(join(d, n), depth + 1)));
  return !looksLikeTask(dir) && walk(dir, 1);
}

class Collector {
  readonly tasks: HarborDatasetTask[] = [];
  readonly invalid: HarborInvalidTask[] = [];
  private readonly byName = new Map<string, string>();

  add(split: string, dir: string): void {
    const read = readHarborTask(dir);
    if ('invalid' in read) {
      this.invalid.push(read.invalid);
      return;
    }
    const first = this.byName.get(read.task.name);
    if (first !== undefined) {
      const err = errors.harborTaskDuplicate(read.task.dir, read.task.name, first);
      this.invalid.push({ dir: read.task.dir, code: err.code, reason: err.message });
      return;
    }
    this.byName.set(read.task.name, read.task.dir);
    this.tasks.push({ split, task: read.task });
  }

  refuse(dir: string, err: { code: string; message: string }): void {
    this.invalid.push({ dir, code: err.code, reason: err.message });
  }
}

function readTree(root: string, out: Collector): void {
  const walk = (dir: string, split: string | undefined, depth: number) => {
    for (const name of subdirs(dir)) {
      const child = join(dir, name);
      if (looksLikeTask(child)) out.add(split ?? 'train', child);
      else if (looksLikeBrokenTask(child)) out.refuse(child, errors.harborTaskToml(child, 'no task.toml (the folder has a task\'s other files)'));
      else if (depth < MAX_DEPTH) walk(child, split ?? splitOf(name), depth + 1);
    }
  };
  walk(root, undefined, 1);
}

const datasetTomlSchema = z.looseObject({
  dataset: z.looseObject({ name: z.string() }).optional(),
  tasks: z.array(z.looseObject({ name: z.string(), digest: z.string().optional() })).default([]),
});

/** dataset.toml: its tasks found among the folder's own task folders, by `[task] name`, else by folder name. */
function readDatasetToml(root: string, out: Collector): void {
  const file = join(root, 'dataset.toml');
  let listing: z.infer<typeof datasetTomlSchema>;
  try {
    listing = datasetTomlSchema.parse(parseToml(readFileSync(file, 'utf8')));
  } catch (e) {
    throw errors.environmentLoad(root, `dataset.toml: ${(e as Error).message.split('\n')[0]}`);
  }
  const local = new Collector();
  readTree(root, local);
  const found = new Map<string, HarborTask>();
  for (const { task } of local.tasks) {
    if (task.config.packageName) found.set(task.config.packageName, task);
    found.set(task.name, task);
  }
  const brokenByName = new Map(local.invalid.map((i) => [basename(i.dir), i]));
  for (const ref of listing.tasks) {
    const short = ref.name.split('/').at(-1) ?? ref.name;
    const task = found.get(ref.name) ?? found.get(short);
    if (task) out.add('train', task.dir);
    else if (brokenByName.has(short)) out.invalid.push(brokenByName.get(short)!);
    else out.refuse(`${file}: ${ref.name}`, errors.harborTaskRemote(`${file}: ${ref.name}`, 'no task folder of that name here (a registry package is not fetched)'));
  }
}

const registrySchema = z.array(
  z.looseObject({
    name: z.string(),
    version: z.string().optional(),
    tasks: z.array(z.looseObject({ name: z.string(), path: z.string().optional(), git_url: z.string().nullish() })),
  }),
);

/** registry.json: each dataset a split (`train` when it lists one), each task a path under the folder. */
function readRegistryJson(root: string, out: Collector): void {
  const file = join(root, 'registry.json');
  let listing: z.infer<typeof registrySchema>;
  try {
    listing = registrySchema.parse(JSON.parse(readFileSync(file, 'utf8')));
  } catch (e) {
    throw errors.environmentLoad(root, `registry.json: ${(e as Error).message.split('\n')[0]}`);
  }
  for (const ds of listing) {
    const split = listing.length === 1 ? 'train' : ds.name;
    for (const t of ds.tasks) {
      const where = `${file}: ${ds.name}/${t.name}`;
      if (t.git_url) {
        out.refuse(where, errors.harborTaskRemote(where, `a git URL (${t.git_url})`));
        continue;
      }
      const dir = resolve(root, t.path ?? t.name);
      if (!dir.startsWith(resolve(root) + '/')) out.refuse(where, errors.harborTaskRemote(where, `path "${t.path}" is outside the folder`));
      else if (!looksLikeTask(dir)) out.refuse(dir, errors.harborTaskToml(dir, existsSync(dir) ? 'no task.toml' : 'no such folder'));
      else out.add(split, dir);
    }
  }
}

/** Every task of a Harbor dataset folder, with its split, and every folder that is not a valid task. */
export function readHarborDataset(dir: string): HarborDataset {
  const root = resolve(dir);
  const out = new Collector();
  const kind = existsSync(join(root, 'dataset.toml')) ? 'dataset.toml' : existsSync(join(root, 'registry.json')) ? 'registry.json' : 'tree';
  if (kind === 'dataset.toml') readDatasetToml(root, out);
  else if (kind === 'registry.json') readRegistryJson(root, out);
  else readTree(root, out);
  return { root, kind, tasks: out.tasks, invalid: out.invalid };
}

/** The row of a task: its instruction as the user message, the harness tools, the task named for the sandbox. */
export function harborRow(environment: string, task: HarborTask, tools: readonly unknown[] = HARBOR_TOOLS): Record<string, unknown> {
  const budget = task.config.metadata['tool_budget'];
  return {
    id: task.name,
    messages: [{ role: 'user', content: task.instruction }],
    tools: [...tools],
    sandbox: { harbor: harborRef(environment, task.name) },
    ...(Number.isSafeInteger(budget) && (budget as number) >= 0 ? { tool_budget: budget } : {}),
    ...(task.config.agent.timeoutSec !== undefined ? { harbor: { agent_timeout_sec: task.config.agent.timeoutSec } } : {}),
  };
}
