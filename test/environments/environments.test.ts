// Environments found in this repository's examples/ and in an init'ed project's folder.
import { describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync, cpSync } from 'node:fs';
import type { Logger } from 'pino';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadRegistry } from '../../src/registry/loader.js';
import { loadEnvironments } from '../../src/environments/load.js';
import { repoRoot } from '../helpers/server.js';

const registry = await loadRegistry({ toolsDir: join(repoRoot, 'tools'), gradersDir: join(repoRoot, 'graders') });

describe('environments', () => {
  it('finds finqa and coding in examples/, each with only its own tools, its grader and its splits', async () => {
    const envs = loadEnvironments([repoRoot, join(repoRoot, 'examples')], registry);
    expect(envs.list().map((e) => e.name).sort()).toEqual(['coding', 'finqa']);
    expect(envs.get('finqa')).toMatchObject({ tools: ['search_docs', 'list_docs', 'read_doc'], grader: 'answer_match' });
    expect(envs.get('coding')).toMatchObject({ tools: ['list_files', 'read_file', 'search', 'shell', 'apply_patch', 'write_file'], grader: 'unit_tests' });
    expect(envs.splits('finqa')).toEqual(['train', 'validation']);
    expect(envs.splits('coding')).toEqual(['train']);
    expect((await envs.rows('finqa', 'validation')).length).toBe(6);
    expect((await envs.rows('coding', 'train'))[0]).toMatchObject({ task_id: 'duration' });
    expect(envs.forTools(['search_docs'])?.name).toBe('finqa');
    expect(envs.forTools(['shell', 'read_file'])?.name).toBe('coding');
    expect(envs.forTools(['shell', 'search_docs'])).toBeUndefined();
    expect(() => envs.get('nope')).toThrow(expect.objectContaining({ code: 'RFT_ERR_UNKNOWN_ENVIRONMENT' }));
  });

  it("leaves out the examples with units of their own (blank, python) without a warning, and warns of one whose units are nowhere", () => {
    const warned: unknown[] = [];
    const log = { warn: (o: unknown) => warned.push(o), debug: () => {} } as unknown as Logger;
    expect(loadEnvironments([repoRoot, join(repoRoot, 'examples')], registry, log).list().map((e) => e.name).sort()).toEqual(['coding', 'finqa']);
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
});
