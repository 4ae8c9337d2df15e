// Node 20 is not supported (README, package.json engines): the command says so in one line on stderr,
// and still runs, since CI runs the unit and route tests on the machine's Node 20.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
// @ts-expect-error: bin/ is plain JavaScript without declarations
import { unsupportedNode } from '../../bin/node-version.js';
import { repoRoot } from './harness.js';

const warn = unsupportedNode as (version: string) => string | undefined;

describe('the Node.js version check', () => {
  it('warns on Node 21 and older, in one line naming the version and what is supported', () => {
    for (const v of ['v20.20.2', 'v18.0.0', 'v21.7.3']) {
      const w = warn(v);
      expect(w).toMatch(/^warning: rft-endpoints needs Node\.js 22 or later and this is v\d+\.\d+\.\d+, which is not supported/);
      expect(w).toContain(v);
      expect(w).not.toContain('\n');
    }
  });

  it('is silent on Node 22 and later', () => {
    for (const v of ['v22.0.0', 'v24.22.3', 'v26.1.0']) expect(warn(v)).toBeUndefined();
  });

  it('the command prints it, then runs: a Node 20 (its version faked before the command starts) gets the line and the answer', () => {
    const fake = `data:text/javascript,Object.defineProperty(process, 'version', { value: 'v20.20.2' })`;
    const bin = join(repoRoot, 'bin/rft-endpoints.js');
    const old = spawnSync(process.execPath, ['--import', fake, bin, '--version'], { cwd: repoRoot, encoding: 'utf8' });
    const now = spawnSync(process.execPath, [bin, '--version'], { cwd: repoRoot, encoding: 'utf8' });
    expect(old.status, old.stderr).toBe(0);
    expect(old.stderr).toMatch(/^warning: rft-endpoints needs Node\.js 22 or later and this is v20\.20\.2/);
    expect(old.stdout.trim()).toMatch(/^\d+\.\d+\.\d+$/);
    expect(now.status, now.stderr).toBe(0);
    expect(now.stderr).toBe('');
  }, 60_000);
});
