// The server image runs as a user that is not root on the host: the bwrap driver, its supervisor
// included, must work there too (every other sandbox test runs as root in CI). Run as root, this
// test starts the driver in a child process with another uid.
import { execFile } from 'node:child_process';
import { chmod, chown, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeIf } from '../helpers/require.js';
import { driversPresent } from './helpers.js';

const run = promisify(execFile);
const UID = 10_077;
const root = process.getuid?.() === 0;
const present = await driversPresent();

// Not root: the test cannot change uid, and the other sandbox tests already run unprivileged.
(root ? describeIf(present.bwrap, 'bwrap as an unprivileged server', 'bubblewrap not available') : describe.skip)(
  'bwrap with a server that is not root',
  () => {
    let base: string;
    beforeAll(async () => {
      base = await mkdtemp(join(tmpdir(), 'rft-unpriv-'));
      await chmod(base, 0o755);
      for (const d of ['home', 'sandboxes']) {
        await mkdir(join(base, d));
        await chown(join(base, d), UID, UID);
      }
    });
    afterAll(() => rm(base, { recursive: true, force: true }));

    it('runs a command in its own network namespace, as that user, with no capabilities', async () => {
      const { stdout } = await run(
        'setpriv',
        [`--reuid=${UID}`, `--regid=${UID}`, '--clear-groups', process.execPath, '--conditions=rft-source', '--import', 'tsx', join(import.meta.dirname, 'fixtures', 'unprivileged-child.ts'), join(base, 'sandboxes', 'root')],
        { cwd: join(import.meta.dirname, '..', '..'), env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: join(base, 'home') }, timeout: 120_000 },
      );
      const r = JSON.parse(stdout.trim().split('\n').at(-1) ?? '{}') as { exitCode: number; stdout: string; stderr: string };
      expect(r.stderr).toBe('');
      expect(r.exitCode).toBe(0);
      expect(r.stdout).toBe(`${UID}\nCapEff:\t0000000000000000\nlo\n`);
    }, 150_000);
  },
);
