import { describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { repoRoot } from '../helpers/server.js';

const cli = (args: string[]) =>
  spawnSync(process.execPath, [join(repoRoot, 'bin/rft-endpoints.js'), ...args], {
    cwd: repoRoot,
    encoding: 'utf8',
    env: { ...process.env, RFT_SANDBOX: 'none', RFT_LOG_LEVEL: 'silent' },
    timeout: 60_000,
  });

describe('the CLI as a process', () => {
  // Regression: the store's checkpoint thread must not let the process exit (code 13) mid-close.
  it('runs check-grader to completion and exits 0 when every check passes', () => {
    const r = cli(['check-grader', '--dataset', 'examples/finqa/valid.jsonl', '--grader', 'answer_match', '--limit', '2', '--min-distinct', '2']);
    expect(r.stdout).toContain('(a) no-op answer scores');
    expect(r.status).toBe(0);
  }, 60_000);

  it('exits 2 with a coded message for a bad configuration', () => {
    const r = spawnSync(process.execPath, [join(repoRoot, 'bin/rft-endpoints.js'), 'serve'], {
      cwd: repoRoot,
      encoding: 'utf8',
      env: { ...process.env, PORT: 'not-a-port' },
      timeout: 30_000,
    });
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/^error RFT_ERR_CONFIG: invalid configuration:\n {2}PORT: /);
  }, 30_000);
});
