// A rollout cannot make itself ungradeable. Whatever it leaves in its workspace (FIFOs, sockets, a
// path deeper than PATH_MAX, a full disk, every inode used), the grade is the cases that pass, with
// the copy's omissions in the explanation: never a failed grade (a 5xx the trainer would answer by
// discarding the rollout, which a policy could learn to prefer to a zero). No host path in it.
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import unitTests from '../../graders/unit_tests.js';
import { withoutHostPaths } from '../../src/grading-service/service.js';
import type { GraderContext } from '../../src/registry/define.js';
import type { Sandbox } from '../../src/sandbox/types.js';
import { canSwitchUid } from '../../src/sandbox/host/uids.js';
import { describeIf } from '../helpers/require.js';
import { repoRoot } from '../helpers/server.js';
import { driverCases, limits, useDriver } from '../helpers/sandboxes.js';
import { applySolution, grade } from './unit-tests-helpers.js';

const improvement = { unit_tests: { mode: 'improvement' } };
const budget = { used: 4, limit: 50, exceeded: false };

/** Leaves the workspace as a hostile rollout would: every kind of thing a copy can choke on. */
const LEAVE_A_MESS = String.raw`
import os, socket
os.mkfifo("pipe")
socket.socket(socket.AF_UNIX).bind("sock")
# a directory path of about 6 KB: past PATH_MAX for anything that copies by full path
here = os.getcwd()
for i in range(30):
    os.mkdir("d" * 200)
    os.chdir("d" * 200)
open("deep.txt", "w").write("deep")
os.chdir(here)
# the disk, filled (1 MiB per file)
os.mkdir("junk")
n = 0
try:
    while True:
        with open("junk/%d" % n, "wb") as f:
            f.write(b"\0" * (1 << 20))
        n += 1
except OSError:
    pass
# then every inode left
os.mkdir("many")
i = 0
try:
    while True:
        open("many/%d" % i, "w").close()
        i += 1
except OSError:
    pass
print(n, i)
`;

for (const d of driverCases) {
  const noRoot = d.name === 'process' && !canSwitchUid();
  describeIf(d.available && !noRoot, `unit_tests on a wrecked workspace (${d.name})`, noRoot ? 'without root the process driver has no disk or inode caps to fill' : d.reason)(
    `unit_tests on a wrecked workspace (${d.name})`,
    () => {
      const ctx = useDriver(d);

      it('grades the cases that pass, and says what the copy left out', async () => {
        const r = await grade(
          ctx.driver,
          'stats',
          async (sb: Sandbox) => {
            await applySolution(sb, 'stats');
            const mess = await sb.exec(['python3', '-c', LEAVE_A_MESS], { timeoutMs: 60_000 });
            expect(mess.exitCode, mess.stderr).toBe(0);
            const [junk, files] = mess.stdout.trim().split(' ').map(Number);
            expect(junk).toBeGreaterThan(3); // the disk did fill up
            expect(files).toBeGreaterThan(100); // and then the inodes
            const df = await sb.exec(['sh', '-c', 'df -P . | tail -1; df -iP . | tail -1']);
            expect(df.stdout).toMatch(/ 100% /); // no room left, in bytes or in inodes
          },
          budget,
          improvement,
          [],
          // small, so that filling it is quick: 16 MiB, 1,024 inodes
          { limits: { ...limits, diskBytes: 16 * 1024 * 1024, inodes: 1024 } },
        );
        expect(r.score).toBe(1);
        expect(r.explanation).toContain('pipe: a FIFO');
        if (d.name !== 'docker') expect(r.explanation).toContain('sock: a socket'); // the engine's archive leaves sockets out
        expect(r.explanation).toMatch(/nested deeper than|a path longer than/);
        expect(r.explanation).not.toContain(ctx.dirs.root);
        expect(r.explanation).not.toContain(repoRoot);
      }, 180_000);
    },
  );
}

describe('unit_tests failures a caller sees', () => {
  it('name no host path: a task whose hidden tests cannot be read', async () => {
    const root = await mkdtemp(join(tmpdir(), 'rft-leftovers-'));
    try {
      await mkdir(join(root, 'task', 'hidden'), { recursive: true });
      const ctx = { templatesRoot: root } as unknown as GraderContext;
      const e = (await Promise.resolve(unitTests.handler({ sample: {}, item: { sandbox: { hidden: 'task/hidden' } }, traceId: 't' }, ctx)).catch((x: unknown) => x)) as Error;
      expect(e).toMatchObject({ code: 'RFT_ERR_GRADER_CONFIG' });
      expect(e.message).toContain('cases.json');
      expect(e.message).not.toContain(root);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });

  it('name no host path: what a grader throws is shown with its paths replaced', () => {
    expect(withoutHostPaths("ENOENT: no such file or directory, open '/tmp/rft-unit-tests-x1/ws/a.py'")).toBe("ENOENT: no such file or directory, open '<path>'");
    expect(withoutHostPaths('cannot read /srv/rft/examples/t/hidden/cases.json: EACCES')).toBe('cannot read <path>: EACCES');
    expect(withoutHostPaths('3/10 cases passed; budget 4/50')).toBe('3/10 cases passed; budget 4/50');
  });
});
