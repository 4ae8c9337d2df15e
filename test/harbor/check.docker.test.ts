// `rft-endpoints harbor check` on Docker (src/cli/harbor.ts): each task's image built, its oracle
// scoring 1 and a no-op episode at most 0.05, through the server's own sandbox and verify step; an
// invalid task named with its code. The reference's config-repair pays 0.3333 for doing nothing, and
// is reported as failing the no-op bar.
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { runHarborCheck } from '../../src/cli/harbor.js';
import { describeIf } from '../helpers/require.js';
import { repoRoot } from '../helpers/server.js';
import { baseImageOn } from './task-folders.js';

const base = await baseImageOn('/var/run/docker.sock');
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describeIf(base === 'rft-endpoints-base:bookworm', 'harbor check on Docker', 'no Docker engine with rft-endpoints-base:bookworm')('harbor check on Docker', () => {
  it('passes a sound task, fails one whose no-op scores, names an invalid one, with a line per task', async () => {
    const root = mkdtempSync(join(tmpdir(), 'harbor-check-'));
    dirs.push(root);
    for (const t of ['write-greeting', 'config-repair', 'prebuilt-image']) cpSync(join(repoRoot, 'examples/harbor', t), join(root, t), { recursive: true });
    cpSync(join(repoRoot, 'test/fixtures/harbor-invalid/no-tests'), join(root, 'no-tests'), { recursive: true });
    const saved = { sandbox: process.env.RFT_SANDBOX, data: process.env.RFT_DATA_DIR };
    process.env.RFT_SANDBOX = 'docker';
    process.env.RFT_DATA_DIR = join(root, '.data');
    const lines: string[] = [];
    try {
      const report = await runHarborCheck(root, { concurrency: '3' }, (l) => lines.push(l));
      const by = Object.fromEntries(report.tasks.map((t) => [t.task, t]));
      expect(by['write-greeting']).toMatchObject({ ok: true, oracle: { score: 1, detail: 'reward.txt' }, noop: { score: 0 } });
      expect(by['prebuilt-image']).toMatchObject({ ok: true, oracle: { score: 1 }, noop: { score: 0 } });
      expect(by['config-repair']).toMatchObject({ ok: false, oracle: { score: 1, detail: 'reward.json' }, noop: { score: 0.3333 } });
      expect(report.invalid).toMatchObject([{ code: 'RFT_ERR_HARBOR_TASK_FILES' }]);
      expect(report.ok).toBe(false);
      expect(lines.filter((l) => /^\[\d\/3\] (ok {2}|FAIL) /.test(l))).toHaveLength(3);
      expect(lines.some((l) => l.startsWith('invalid ') && l.includes('no-tests'))).toBe(true);
    } finally {
      for (const [k, v] of [['RFT_SANDBOX', saved.sandbox], ['RFT_DATA_DIR', saved.data]] as const) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    }
  }, 300_000);
});
