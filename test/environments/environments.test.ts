// Environments found in this repository's examples/ and in an init'ed project's folder.
import { describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync, cpSync } from 'node:fs';
import type { Logger } from 'pino';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadRegistry } from '../../src/registry/loader.js';
import { loadEnvironments } from '../../src/environments/load.js';
import { harborGrader } from '../../src/harbor/grader.js';
import { HarborTasks } from '../../src/harbor/registry.js';
import { repoRoot } from '../helpers/server.js';

const registry = await loadRegistry({ toolsDir: join(repoRoot, 'tools'), gradersDir: join(repoRoot, 'graders') });
// The server's built-in harbor grader (src/app.ts registers it): examples/harbor is an environment too.
const bare = { tools: registry.tools, graders: new Map(registry.graders) };
registry.graders.set('harbor', harborGrader({ tasks: () => undefined, verify: () => Promise.reject(new Error('not graded here')) }));

describe('environments', () => {
  it('finds finqa, coding and harbor in examples/, each with only its own tools, its grader and its splits', async () => {
    const envs = loadEnvironments([repoRoot, join(repoRoot, 'examples')], registry);
    expect(envs.list().map((e) => e.name).sort()).toEqual(['coding', 'finqa', 'harbor']);
    expect(envs.get('finqa')).toMatchObject({ tools: ['search_docs', 'list_docs', 'read_doc'], grader: 'answer_match' });
    expect(envs.get('coding')).toMatchObject({ tools: ['list_files', 'read_file', 'search', 'shell', 'apply_patch', 'write_file'], grader: 'unit_tests' });
    expect(envs.splits('finqa')).toEqual(['train', 'validation']);
    expect(envs.splits('coding')).toEqual(['train']);
    expect((await envs.rows('finqa', 'validation')).length).toBe(6);
    expect((await envs.rows('coding', 'train'))[0]).toMatchObject({ task_id: 'duration' });
    expect(envs.forTools(['search_docs'])?.name).toBe('finqa');
    // harbor's tools (shell and the file tools) are coding's too: a row's tools alone do not tell them apart.
    expect(envs.forTools(['search', 'shell'])?.name).toBe('coding');
    expect(envs.forTools(['shell', 'search_docs'])).toBeUndefined();
    expect(() => envs.get('nope')).toThrow(expect.objectContaining({ code: 'RFT_ERR_UNKNOWN_ENVIRONMENT' }));
  });

  it("leaves out the examples with units of their own (blank, python) without a warning, and warns of one whose units are nowhere", () => {
    const warned: unknown[] = [];
    const log = { warn: (o: unknown) => warned.push(o), info: () => {}, debug: () => {} } as unknown as Logger;
    expect(loadEnvironments([repoRoot, join(repoRoot, 'examples')], registry, log).list().map((e) => e.name).sort()).toEqual(['coding', 'finqa', 'harbor']);
    expect(warned).toEqual([]);
    const dir = mkdtempSync(join(tmpdir(), 'rft-env-'));
    try {
      // The blank example's job.json alone: its lookup_price and price_match are nowhere.
      const orphan = join(dir, 'orphan');
      mkdirSync(orphan);
      cpSync(join(repoRoot, 'examples/blank/job.json'), join(orphan, 'job.json'));
      expect(loadEnvironments([orphan], registry, log).list()).toEqual([]);
      expect(warned).toEqual([expect.objectContaining({ environment: 'orphan', missing: ['lookup_price', 'price_match'] })]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('takes an init\'ed project folder as one environment named after it, and leaves out a job.json it cannot read', () => {
    const dir = mkdtempSync(join(tmpdir(), 'rft-env-'));
    try {
      const project = join(dir, 'my-agent');
      cpSync(join(repoRoot, 'examples/finqa'), project, { recursive: true, filter: (p) => !p.includes('/docs') });
      const broken = join(dir, 'broken');
      cpSync(join(repoRoot, 'examples/blank'), broken, { recursive: true });
      writeFileSync(join(broken, 'job.json'), '{not json');
      const envs = loadEnvironments([project, broken], registry);
      expect(envs.list().map((e) => e.name)).toEqual(['my-agent']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('serves a folder of Harbor tasks: the harness tools, the harbor grader, its rows by split, its tasks registered for the sandbox side', async () => {
    const tasks = new HarborTasks();
    const warned: unknown[] = [];
    const log = { warn: (o: unknown) => warned.push(o), info: () => {}, debug: () => {} } as unknown as Logger;
    const dir = mkdtempSync(join(tmpdir(), 'rft-env-'));
    try {
      const tb = join(dir, 'tb');
      cpSync(join(repoRoot, 'examples/harbor/write-greeting'), join(tb, 'write-greeting'), { recursive: true });
      cpSync(join(repoRoot, 'examples/harbor/count-answers'), join(tb, 'validation', 'count-answers'), { recursive: true });
      cpSync(join(repoRoot, 'test/fixtures/harbor-invalid/multi-step'), join(tb, 'multi-step'), { recursive: true });
      const envs = loadEnvironments([tb], registry, log, undefined, { tasks });
      expect(envs.get('tb')).toMatchObject({ tools: ['shell', 'read_file', 'write_file', 'list_files'], grader: 'harbor' });
      expect(envs.splits('tb')).toEqual(['train', 'validation']);
      const [row] = await envs.rows('tb', 'train');
      expect(row).toMatchObject({ id: 'write-greeting', sandbox: { harbor: 'tb/write-greeting' }, messages: [{ role: 'user' }] });
      // The rows carry the tools' definitions, as every dataset row does.
      expect((row!.tools as { function: { name: string } }[]).map((t) => t.function.name)).toEqual(['shell', 'read_file', 'write_file', 'list_files']);
      expect(tasks.lookup('tb/count-answers')?.name).toBe('count-answers');
      expect(tasks.lookup('tb/multi-step')).toBeUndefined();
      expect(warned).toEqual([expect.objectContaining({ code: 'RFT_ERR_HARBOR_TASK_MULTI_STEP', environment: 'tb' })]);
      // Without the harbor grader, the environment is left out with a warning naming it.
      warned.length = 0;
      expect(loadEnvironments([tb], bare, log).list()).toEqual([]);
      expect(warned).toEqual([expect.objectContaining({ environment: 'tb', missing: ['harbor'] })]);
      // Given the built-in grader, the load registers it (after the project's default grader was chosen) and serves tb.
      const reg = { tools: bare.tools, graders: new Map(bare.graders) };
      const grader = harborGrader({ tasks: tasks.lookup, verify: () => Promise.reject(new Error('not graded here')) });
      expect(loadEnvironments([tb], reg, log, undefined, { tasks, grader: () => grader }).list().map((e) => e.name)).toEqual(['tb']);
      expect(reg.graders.get('harbor')).toBe(grader);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
