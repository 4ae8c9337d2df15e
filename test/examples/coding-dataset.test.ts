import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildRows, checkTasks, taskIds, toJsonl, TRAIN_FILE } from '../../examples/coding/build-dataset.js';
import { repoRoot } from '../helpers/server.js';

describe('coding example dataset', () => {
  it('has at least five tasks, each with a statement, parseable hidden cases and an applicable reference patch', async () => {
    const ids = await taskIds();
    expect(ids.length).toBeGreaterThanOrEqual(5);
    expect(await checkTasks(ids)).toEqual([]);
  });

  it('train.jsonl is what build-dataset.ts writes from the tasks and the tools', async () => {
    expect(readFileSync(TRAIN_FILE, 'utf8')).toBe(toJsonl(await buildRows(await taskIds())));
  });

  it('describes every parameter of every coding tool to the model', async () => {
    const [row] = await buildRows(['roman']);
    const tools = row?.tools as { function: { name: string; description: string; parameters: { properties: Record<string, { description?: string }> } } }[];
    expect(tools.map((t) => t.function.name).sort()).toEqual(['apply_patch', 'list_files', 'read_file', 'search', 'shell', 'write_file']);
    for (const t of tools) {
      expect(t.function.description.length, t.function.name).toBeGreaterThan(20);
      for (const [name, p] of Object.entries(t.function.parameters.properties)) expect(p.description, `${t.function.name}.${name}`).toBeTruthy();
    }
  });

  it('job.json names every tool of the rows and the unit_tests endpoint grader', async () => {
    const job = JSON.parse(readFileSync(join(repoRoot, 'examples/coding/job.json'), 'utf8'));
    const rft = job.method.reinforcement;
    expect(job.method.type).toBe('reinforcement');
    const [row] = await buildRows(['roman']);
    const rowTools = (row?.tools as { function: { name: string } }[]).map((t) => t.function.name).sort();
    expect(rft.tools.map((t: { name: string }) => t.name).sort()).toEqual(rowTools);
    expect(rft.grader).toMatchObject({ type: 'endpoint', name: 'unit_tests' });
    expect(rft.grader.url).toMatch(/\/graders\/unit_tests$/);
  });
});
