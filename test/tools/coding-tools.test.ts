import { afterAll, beforeAll, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describeIf } from '../helpers/require.js';
import type { Sandbox, SandboxDriver } from '../../src/sandbox/types.js';
import shell from '../../tools/shell.js';
import readFile from '../../tools/read_file.js';
import writeFile from '../../tools/write_file.js';
import applyPatch from '../../tools/apply_patch.js';
import listFiles from '../../tools/list_files.js';
import search from '../../tools/search.js';
import { driverCases, runTool, sandboxSpec, tempDirs } from '../helpers/sandboxes.js';

const ESCAPE = 'RFT_ERR_PATH_ESCAPE';

for (const d of driverCases) {
  describeIf(d.available, `coding tools on the ${d.name} driver`, d.reason)(`coding tools on the ${d.name} driver`, () => {
    let dirs: Awaited<ReturnType<typeof tempDirs>>;
    let driver: SandboxDriver;
    let sb: Sandbox;
    let secret: string;

    beforeAll(async () => {
      dirs = await tempDirs();
      driver = d.make(dirs.root);
      secret = join(dirs.outside, 'secret.txt');
      writeFileSync(secret, 'host secret\n');
      sb = await driver.create(
        sandboxSpec(`trace_${randomUUID()}`, {
          files: { 'src/app.py': 'def add(a, b):\n    return a - b\n', 'README.md': '# demo\nline two\n' },
        }),
      );
      // Symlinks planted the way an agent would: from a shell call inside the sandbox.
      await sb.exec(`ln -s ${secret} link_to_secret && ln -s ${dirs.outside} link_to_outside && ln -s / link_to_root`);
    });
    afterAll(async () => {
      await sb?.destroy();
      await dirs.cleanup();
    });

    const run = (tool: Parameters<typeof runTool>[0], args: unknown) => runTool(tool, args, sb);
    const secretUntouched = () => {
      expect(readFileSync(secret, 'utf8')).toBe('host secret\n');
    };

    it('shell returns the exit code, stdout and stderr of a failing command without throwing', async () => {
      const out = await run(shell, { command: 'echo out; echo err >&2; exit 3' });
      expect(out).toBe('exit_code: 3\n--- stdout ---\nout\n\n--- stderr ---\nerr\n');
    });

    it('shell reports a timeout', async () => {
      const out = await run(shell, { command: 'sleep 20', timeout_ms: 300 });
      expect(out).toMatch(/timed_out: true/);
    });

    it('shell cuts long output in the middle with a visible marker', async () => {
      const out = await run(shell, { command: 'seq 1 10000' });
      expect(out).toMatch(/\[\.\.\. \d+ characters omitted \.\.\.\]/);
      expect(out).toContain('\n10000\n');
      expect(out.length).toBeLessThan(7_000);
    });

    it('shell runs in a workdir and refuses one outside the workspace', async () => {
      expect(await run(shell, { command: 'ls', workdir: 'src' })).toContain('app.py');
      await expect(run(shell, { command: 'ls', workdir: '..' })).rejects.toMatchObject({ code: ESCAPE });
      // A planted symlink as workdir is refused (process) or resolved inside the sandbox's own view
      // (bwrap, docker), where the host directory does not exist: either way it is not listed.
      const viaLink = await run(shell, { command: 'ls', workdir: 'link_to_outside' }).catch((e: { code: string }) => e.code);
      expect(viaLink === ESCAPE || !viaLink.includes('secret.txt')).toBe(true);
    });

    it('read_file shows numbered lines of a range', async () => {
      expect(await run(readFile, { path: 'README.md', start_line: 2, end_line: 2 })).toBe('2\tline two');
    });

    it('read_file pages a long file with a footer saying where to go on', async () => {
      await sb.exec('seq 1 1000 > long.txt');
      const out = await run(readFile, { path: 'long.txt' });
      expect(out.split('\n')[0]).toBe('1\t1');
      expect(out).toMatch(/\[lines 1-400 of 1000; read on with start_line=401\]$/);
      expect(await run(readFile, { path: 'long.txt', start_line: 5, end_line: 6 })).toBe('5\t5\n6\t6');
    });

    it('read_file does not leave the workspace by .., absolute path or planted symlinks', async () => {
      for (const path of ['../secret.txt', secret, 'link_to_secret', 'link_to_outside/secret.txt', 'link_to_root/etc/hostname']) {
        await expect(run(readFile, { path }), path).rejects.toMatchObject({ code: ESCAPE });
      }
    });

    it('write_file creates parent directories', async () => {
      expect(await run(writeFile, { path: 'deep/er/new.txt', content: 'a\nb\n' })).toBe('wrote deep/er/new.txt (4 bytes, 2 lines)');
      expect((await sb.exec('cat deep/er/new.txt')).stdout).toBe('a\nb\n');
    });

    it('write_file does not leave the workspace by .., absolute path or planted symlinks', async () => {
      for (const path of ['../escaped.txt', join(dirs.outside, 'abs.txt'), 'link_to_secret', 'link_to_outside/new.txt']) {
        await expect(run(writeFile, { path, content: 'pwned' }), path).rejects.toMatchObject({ code: ESCAPE });
      }
      secretUntouched();
      expect(existsSync(join(dirs.outside, 'new.txt'))).toBe(false);
      expect(existsSync(join(dirs.outside, 'abs.txt'))).toBe(false);
    });

    it('apply_patch applies a Codex patch through the sandbox', async () => {
      const out = await run(applyPatch, {
        patch: '*** Begin Patch\n*** Update File: src/app.py\n@@ def add(a, b):\n-    return a - b\n+    return a + b\n*** Add File: src/new.py\n+x = 1\n*** End Patch',
      });
      expect(out).toBe('Success. Updated the following files:\nM src/app.py\nA src/new.py');
      expect((await sb.exec('python3 -c "import sys; sys.path.insert(0, \'src\'); import app; print(app.add(2, 3))"')).stdout).toBe('5\n');
    });

    it('apply_patch applies a unified diff, including a rename and a delete', async () => {
      await run(writeFile, { path: 'u/a.txt', content: 'one\ntwo\n' });
      await run(writeFile, { path: 'u/gone.txt', content: 'x\n' });
      const out = await run(applyPatch, {
        patch: 'diff --git a/u/a.txt b/u/b.txt\nrename from u/a.txt\nrename to u/b.txt\n--- a/u/a.txt\n+++ b/u/b.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+TWO\n--- a/u/gone.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n',
      });
      expect(out).toContain('M u/b.txt (moved from u/a.txt)');
      expect((await sb.exec('cat u/b.txt; ls u')).stdout).toBe('one\nTWO\nb.txt\n');
    });

    it('apply_patch that does not apply leaves every file untouched and names the file and hunk', async () => {
      await run(writeFile, { path: 'keep/one.txt', content: 'one\n' });
      await run(writeFile, { path: 'keep/two.txt', content: 'two\n' });
      const patch =
        '*** Begin Patch\n*** Update File: keep/one.txt\n@@\n-one\n+ONE\n*** Delete File: keep/two.txt\n*** Update File: keep/two.txt\n@@\n-zwei\n+TWO\n*** End Patch';
      await expect(run(applyPatch, { patch })).rejects.toMatchObject({ code: 'RFT_ERR_PATCH_CONFLICT' });
      expect((await sb.exec('cat keep/one.txt keep/two.txt')).stdout).toBe('one\ntwo\n');
    });

    it('apply_patch does not leave the workspace by .., absolute path or planted symlinks', async () => {
      const cases = [
        '*** Add File: ../escaped.txt\n+x',
        `*** Add File: ${join(dirs.outside, 'abs.txt')}\n+x`,
        '*** Update File: link_to_secret\n@@\n-host secret\n+pwned',
        '*** Delete File: link_to_secret',
        '*** Add File: link_to_outside/new.txt\n+x',
        '*** Update File: link_to_root/etc/hostname\n@@\n+x',
      ];
      for (const body of cases) {
        await expect(run(applyPatch, { patch: `*** Begin Patch\n${body}\n*** End Patch` }), body).rejects.toMatchObject({ code: ESCAPE });
      }
      secretUntouched();
      expect(existsSync(join(dirs.outside, 'new.txt'))).toBe(false);
    });

    it('apply_patch rolls back what it wrote when a later write is refused', async () => {
      await run(writeFile, { path: 'mv/src.txt', content: 'data\n' });
      const patch = '*** Begin Patch\n*** Update File: mv/src.txt\n@@\n-data\n+changed\n*** Add File: link_to_outside/x.txt\n+x\n*** End Patch';
      await expect(run(applyPatch, { patch })).rejects.toMatchObject({ code: ESCAPE });
      expect((await sb.exec('cat mv/src.txt')).stdout).toBe('data\n');
      expect(existsSync(join(dirs.outside, 'x.txt'))).toBe(false);
    });

    // A patch that fails must leave no trace: a directory left behind by a failed Add changed the
    // workspace after the rollout's last successful call (issue 26: the old survival check then refused the grade).
    it('apply_patch that adds a file where it also needs a directory fails and leaves no directory behind', async () => {
      const patch = '*** Begin Patch\n*** Add File: nd/file\n+a\n*** Add File: nd/file/x\n+b\n*** End Patch';
      await expect(run(applyPatch, { patch })).rejects.toMatchObject({ code: 'RFT_ERR_PATCH_CONFLICT' });
      expect((await sb.exec('ls -d nd 2>&1; echo $?')).stdout).toMatch(/No such file or directory\n[12]\n$/);
    });

    it('apply_patch removes the directories it created when a later write is refused', async () => {
      const patch = '*** Begin Patch\n*** Add File: nd2/deep/x.txt\n+x\n*** Add File: link_to_outside/y.txt\n+y\n*** End Patch';
      await expect(run(applyPatch, { patch })).rejects.toMatchObject({ code: ESCAPE });
      expect((await sb.exec('ls -d nd2 2>&1; echo $?')).stdout).toMatch(/No such file or directory\n[12]\n$/);
      expect(existsSync(join(dirs.outside, 'y.txt'))).toBe(false);
    });

    it('apply_patch that fails on a file where it needs a directory leaves the workspace as it was', async () => {
      await run(writeFile, { path: 'plain.txt', content: 'plain\n' });
      const patch = '*** Begin Patch\n*** Add File: nd3/deep/x.txt\n+x\n*** Add File: plain.txt/y.txt\n+y\n*** End Patch';
      const failed = await run(applyPatch, { patch }).then(() => null, (e: unknown) => e);
      expect(failed).not.toBeNull();
      expect((await sb.exec('ls -d nd3 2>&1; echo $?; cat plain.txt')).stdout).toMatch(/No such file or directory\n[12]\nplain\n$/);
    });

    it('list_files lists directories with a slash and files with sizes, to a depth', async () => {
      await run(writeFile, { path: 'tree/a/b/c.txt', content: 'c' });
      expect(await run(listFiles, { path: 'tree', depth: 2 })).toBe('tree/a/\ntree/a/b/');
      expect(await run(listFiles, { path: 'tree', depth: 3 })).toBe('tree/a/\ntree/a/b/\ntree/a/b/c.txt (1 B)');
    });

    it('list_files shows planted symlinks as symlinks and never walks them', async () => {
      const out = await run(listFiles, { depth: 2 });
      expect(out).toContain('link_to_root (symlink)');
      expect(out).not.toContain('link_to_root/');
    });

    it('list_files does not leave the workspace by .., absolute path or planted symlinks', async () => {
      for (const path of ['..', '/etc', 'link_to_outside', 'link_to_root/etc']) {
        await expect(run(listFiles, { path }), path).rejects.toMatchObject({ code: ESCAPE });
      }
    });

    it('search finds matches with paths and line numbers, filtered by glob', async () => {
      await run(writeFile, { path: 's/one.py', content: 'alpha\nneedle here\n' });
      await run(writeFile, { path: 's/two.txt', content: 'needle too\n' });
      expect(await run(search, { pattern: 'needle', path: 's', glob: '*.py' })).toBe('s/one.py:2:needle here');
      expect(await run(search, { pattern: 'no such thing', path: 's' })).toBe('no matches');
    });

    it('search treats fixed strings literally and caps the matches', async () => {
      await sb.exec('mkdir -p many && for i in $(seq 1 30); do echo "a.b $i" >> many/f.txt; done; echo "axb" >> many/f.txt');
      const out = await run(search, { pattern: 'a.b', fixed_strings: true, path: 'many', max_results: 5 });
      expect(out.split('\n').slice(0, 5).every((l) => l.includes('a.b'))).toBe(true);
      expect(out).toMatch(/\[showing 5 of 30 matches/);
    });

    it('search does not leave the workspace by .., absolute path or planted symlinks', async () => {
      for (const path of ['..', '/etc', 'link_to_outside', 'link_to_root', 'link_to_root/etc']) {
        await expect(run(search, { pattern: 'secret', path }), path).rejects.toMatchObject({ code: ESCAPE });
      }
      // and a symlink met while walking the workspace is not followed
      expect(await run(search, { pattern: 'host secret', fixed_strings: true })).toBe('no matches');
    });
  });
}
