// `init --example harbor`: a folder of Harbor tasks that is itself one environment (the tasks, the
// harness tools with their _lib code, a package.json whose scripts check, serve and convert it).
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { initProject } from '../../../src/cli/init/project.js';
import { loadEnvironments } from '../../../src/environments/load.js';
import { harborGrader } from '../../../src/harbor/grader.js';
import { HarborTasks } from '../../../src/harbor/registry.js';
import { loadRegistry } from '../../../src/registry/loader.js';
import { repoRoot } from '../../helpers/server.js';

const root = mkdtempSync(join(tmpdir(), 'rft-init-harbor-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('init --example harbor', () => {
  it('writes the tasks, the harness units and scripts; the folder is served as one environment named after it', async () => {
    const dir = join(root, 'my-tasks');
    const done = initProject({ dir, example: 'harbor', packageSpec: 'file:/x' });
    expect(done.example).toBe('harbor');
    for (const f of ['tools/shell.ts', 'tools/read_file.ts', 'tools/write_file.ts', 'tools/list_files.ts', 'tools/_lib/text.ts', 'tasks/write-greeting/task.toml', 'tasks/write-greeting/solution/solve.sh', 'README.md']) {
      expect(existsSync(join(dir, f)), f).toBe(true);
    }
    expect(existsSync(join(dir, 'job.json'))).toBe(false);
    const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { scripts: Record<string, string>; dependencies: Record<string, string> };
    expect(pkg.scripts.check).toMatch(/harbor check \.$/);
    expect(pkg.dependencies['rft-endpoints']).toBe('file:/x');
    // The project's tools are this package's (same files): the server would load them from its tools/.
    const registry = await loadRegistry({ toolsDir: join(repoRoot, 'tools'), gradersDir: join(dir, 'graders') });
    const tasks = new HarborTasks();
    const envs = loadEnvironments([dir], registry, undefined, { dirs: [dir] }, { tasks, grader: () => harborGrader({ tasks: tasks.lookup, verify: () => Promise.reject(new Error('not here')) }) });
    expect(envs.list().map((e) => e.name)).toEqual(['my-tasks']);
    const rows = await envs.rows('my-tasks', 'train');
    expect(rows.length).toBe(12);
    expect(rows.find((r) => r.id === 'write-greeting')).toMatchObject({ sandbox: { harbor: 'my-tasks/write-greeting' } });
    expect(tasks.lookup('my-tasks/config-repair')?.name).toBe('config-repair');
  });
});
