import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdir, readFile, stat, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { BwrapDriver } from '../../../src/sandbox/drivers/bwrap/driver.js';
import { DockerDriver } from '../../../src/sandbox/drivers/docker/driver.js';
import { ProcessDriver } from '../../../src/sandbox/drivers/process/driver.js';
import { workspaceSource } from '../../../src/sandbox/workspace/workspace.js';
import { DOCKER_IMAGE, driversPresent, spec, tempRoot } from '../helpers.js';
import { runLabels } from '../../helpers/run-label.js';
import listFilesTool from '../../../tools/list_files.js';

const present = await driversPresent();

describe('workspace templates', () => {
  let tmp: Awaited<ReturnType<typeof tempRoot>>;
  let templates: string;
  beforeAll(async () => {
    tmp = await tempRoot();
    templates = join(tmp.root, '..', 'templates');
    await mkdir(join(templates, 'repo', 'src'), { recursive: true });
    await mkdir(join(templates, 'repo', '.hidden_tests'), { recursive: true });
    await mkdir(join(templates, 'elsewhere-hidden'), { recursive: true });
    await writeFile(join(templates, 'repo', 'src', 'app.py'), 'def add(a, b):\n    return a - b\n');
    await writeFile(join(templates, 'repo', '.hidden_tests', 'test_add.py'), 'secret test');
    await symlink('/etc', join(templates, 'escape'));
  });
  afterAll(() => tmp.cleanup());

  it('resolves template and hidden folders below the templates root', async () => {
    const src = await workspaceSource({ sandbox: { template: 'repo', hidden: 'repo/.hidden_tests', files: { a: 'b' } } }, templates);
    expect(src.templateDir).toBe(join(templates, 'repo'));
    expect(src.hiddenDir).toBe(join(templates, 'repo', '.hidden_tests'));
    expect(src.files).toEqual({ a: 'b' });
  });

  it('is empty for a row without a sandbox field', async () => {
    expect(await workspaceSource({}, templates)).toEqual({});
  });

  it.each([['../..'], ['/etc'], ['escape'], ['missing'], ['repo/src/app.py']])('refuses template %s with RFT_ERR_SANDBOX_TEMPLATE', async (template) => {
    await expect(workspaceSource({ sandbox: { template } }, templates)).rejects.toMatchObject({ code: 'RFT_ERR_SANDBOX_TEMPLATE', statusCode: 400 });
  });

  it('names no host path when the templates root is missing', async () => {
    const missing = join(templates, 'no-such-root');
    const e = (await workspaceSource({ sandbox: { template: 'repo' } }, missing).catch((x: unknown) => x)) as Error;
    expect(e).toMatchObject({ code: 'RFT_ERR_CONFIG' });
    expect(JSON.stringify(e)).not.toContain(tmp.root.split('/sandboxes')[0]);
    expect(e.message).not.toContain(missing);
  });

  it('refuses a malformed sandbox field with RFT_ERR_SANDBOX_TEMPLATE', async () => {
    await expect(workspaceSource({ sandbox: { files: { a: 1 } } }, templates)).rejects.toMatchObject({ code: 'RFT_ERR_SANDBOX_TEMPLATE' });
  });

  for (const [name, make] of [
    ['process', (root: string) => new ProcessDriver({ sandboxesRoot: root, instanceId: 'ws-test' })],
    ['bwrap', (root: string) => new BwrapDriver({ sandboxesRoot: root, instanceId: 'ws-test' })],
    ['docker', () => new DockerDriver({ instanceId: `ws-test-${process.pid}`, labels: runLabels, image: DOCKER_IMAGE })],
  ] as const) {
    describe.skipIf(!present[name])(`populated by the ${name} driver`, () => {
      it('copies the template without its hidden folder and adds inline files', async () => {
        const src = await workspaceSource({ sandbox: { template: 'repo', hidden: 'repo/.hidden_tests', files: { 'NOTES.md': 'n' } } }, templates);
        const sb = await make(tmp.root).create(spec('trace_ws1', src));
        expect((await sb.listFiles()).map((f) => f.path)).toEqual(['NOTES.md', 'src', 'src/app.py']);
        await sb.destroy();
      });

      it('gives the rollout a copy: changing it leaves the template untouched', async () => {
        const src = await workspaceSource({ sandbox: { template: 'repo' } }, templates);
        const sb = await make(tmp.root).create(spec('trace_ws2', src));
        const r = await sb.exec('echo hacked > src/app.py && cat src/app.py');
        expect(r.stdout).toBe('hacked\n');
        expect(await readFile(join(templates, 'repo', 'src', 'app.py'), 'utf8')).toContain('return a - b');
        expect((await stat(join(templates, 'repo', 'src', 'app.py'))).nlink).toBe(1);
        await sb.destroy();
      });

      it('lists names that are not UTF-8, escaped and marked, instead of hiding them (list_files too)', async () => {
        const sb = await make(tmp.root).create(spec('trace_ws4', { files: { 'ok.txt': 'k' } }));
        try {
          const r = await sb.exec("printf x > \"$(printf 'bad\\377name')\"; mkdir \"$(printf 'd\\351')\"; printf y > \"$(printf 'd\\351')/inner\"");
          expect(r.exitCode, r.stderr).toBe(0);
          expect(await sb.listFiles()).toEqual([
            { path: 'bad\\xffname', type: 'file', size: 1, escaped: true },
            { path: 'd\\xe9', type: 'dir', size: expect.any(Number), escaped: true },
            { path: 'd\\xe9/inner', type: 'file', size: 1, escaped: true },
            { path: 'ok.txt', type: 'file', size: 1 },
          ]);
          const out = await listFilesTool.handler({}, { sandbox: () => Promise.resolve(sb), item: {} } as never);
          expect(out).toContain('bad\\xffname (1 B) [name not UTF-8');
          expect(out).toMatch(/^ok\.txt \(1 B\)$/m);
        } finally {
          await sb.destroy();
        }
      });

      it('lets the sandbox user edit the files it was given', async () => {
        const sb = await make(tmp.root).create(spec('trace_ws3', { files: { 'deep/er/f.txt': 'v1' } }));
        const r = await sb.exec('echo v2 > deep/er/f.txt && mkdir deep/er/new && cat deep/er/f.txt');
        expect(r.exitCode).toBe(0);
        expect((await sb.readFile('deep/er/f.txt')).toString()).toBe('v2\n');
        await sb.destroy();
      });
    });
  }
});
