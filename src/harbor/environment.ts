// A folder of Harbor tasks served as an environment (src/environments): its tools are the harness
// (HARBOR_TOOLS), its grader `harbor` (the task's own tests, graders/harbor.ts), its splits the
// dataset's (dataset.ts). Read once at boot: the sandbox side needs every task then (registry.ts), and
// a task's image is built per its environment digest, so a changed task is served after a restart.
import type { Logger } from 'pino';
import { errors } from '../errors.js';
import type { Row } from '../environments/dataset.js';
import type { Environment } from '../environments/environment.js';
import { chatCompletionsTools, type Registry } from '../registry/loader.js';
import { HARBOR_TOOLS, harborRow, readHarborDataset, type HarborDataset } from './dataset.js';
import type { HarborTasks } from './registry.js';

/** The grader a Harbor environment's rollouts are scored by. */
export const HARBOR_GRADER = 'harbor';

/** A Harbor dataset's rows by split, as the environments' doors ask for them. */
export class HarborRows {
  private readonly bySplit = new Map<string, Row[]>();

  constructor(
    readonly environment: string,
    dataset: HarborDataset,
    tools: readonly unknown[],
  ) {
    for (const { split, task } of dataset.tasks) {
      const rows = this.bySplit.get(split) ?? [];
      rows.push(harborRow(environment, task, tools));
      this.bySplit.set(split, rows);
    }
  }

  /** train first, validation next, then the rest by name. */
  splits(): string[] {
    const order = (s: string) => (s === 'train' ? 0 : s === 'validation' ? 1 : 2);
    return [...this.bySplit.keys()].sort((a, b) => order(a) - order(b) || a.localeCompare(b));
  }

  rows(split: string): Promise<Row[]> {
    const rows = this.bySplit.get(split === 'valid' ? 'validation' : split);
    if (rows) return Promise.resolve(rows);
    return Promise.reject(errors.badRequest(`environment "${this.environment}" has no split "${split}" (it has: ${this.splits().join(', ') || 'none'})`));
  }
}

/**
 * The environment of a Harbor dataset folder, named after the folder; its tasks registered for the
 * sandbox side. Every invalid task is logged with its code and reason (never dropped silently).
 */
export function harborEnvironment(name: string, dir: string, registry: Registry, tasks: HarborTasks, log?: Logger): Environment {
  const dataset = readHarborDataset(dir);
  for (const bad of dataset.invalid) log?.warn({ environment: name, dir: bad.dir, code: bad.code, reason: bad.reason }, 'Harbor task left out: it is not a valid task');
  tasks.register(name, dataset.tasks.map((t) => t.task));
  log?.info({ environment: name, dir, tasks: dataset.tasks.length, invalid: dataset.invalid.length, listing: dataset.kind }, 'Harbor environment loaded');
  const tools = chatCompletionsTools(registry, HARBOR_TOOLS);
  return { name, dir, tools: HARBOR_TOOLS, grader: HARBOR_GRADER, dataset: new HarborRows(name, dataset, tools) };
}
