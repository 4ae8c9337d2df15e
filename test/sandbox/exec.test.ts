// The Sandbox.exec contract, the same on every driver present: what tools rely on.
import { expect, it } from 'vitest';
import type { Sandbox } from '../../src/sandbox/types.js';
import { describeIf } from '../helpers/require.js';
import { driversPresent, driverWithSandbox, spec } from './helpers.js';

const present = await driversPresent();

for (const name of ['process', 'bwrap', 'docker'] as const) {
  describeIf(present[name], `exec on ${name}`, `${name} sandbox driver not available`)(`exec contract (${name})`, () => {
    const ctx = driverWithSandbox(name, spec('trace_exec', { files: { 'sub/f.txt': 'in sub' } }));
    const sb = { exec: (...a: Parameters<Sandbox['exec']>) => ctx.sb.exec(...a) };

    it('keeps stdout and stderr apart and reports the exit code', async () => {
      const r = await sb.exec('echo out; echo err >&2; exit 3');
      expect(r).toMatchObject({ exitCode: 3, signal: null, stdout: 'out\n', stderr: 'err\n', timedOut: false, stdoutTruncated: false });
    });

    it('runs an argv without a shell', async () => {
      const r = await sb.exec(['printf', '%s|', 'a b', '$HOME', ';']);
      expect(r.stdout).toBe('a b|$HOME|;|');
    });

    it('feeds stdin and closes it', async () => {
      const r = await sb.exec(['wc', '-c'], { stdin: 'x'.repeat(100_000) });
      expect(r.stdout.trim()).toBe('100000');
    });

    it('passes the env it is given, and a sane default PATH and HOME', async () => {
      const r = await sb.exec('echo "$GREETING|$PATH|$HOME"', { env: { GREETING: 'hello' } });
      const [greeting, path, home] = r.stdout.trim().split('|');
      expect(greeting).toBe('hello');
      expect(path).toContain('/usr/bin');
      expect(home).toMatch(/ws$|^\/workspace$/);
    });

    it('runs in a cwd relative to the workspace', async () => {
      expect((await sb.exec('cat f.txt', { cwd: 'sub' })).stdout).toBe('in sub');
    });

    it('returns when the command exits even if a background job still holds its output', async () => {
      const r = await sb.exec('sleep 20 & echo done');
      expect(r.stdout).toBe('done\n');
      expect(r.durationMs).toBeLessThan(1_500);
    });

    it('kills the command when the caller aborts', async () => {
      const ac = new AbortController();
      setTimeout(() => ac.abort(), 200);
      const r = await sb.exec('sleep 20; echo woke', { signal: ac.signal });
      expect(r.stdout).toBe('');
      expect(r.durationMs).toBeLessThan(5_000);
      expect(r.exitCode === 0).toBe(false);
    });

    it('reads a file whole, or only its first bytes when asked', async () => {
      await ctx.sb.exec('seq 1 100000 > big.txt');
      expect((await ctx.sb.readFile('big.txt')).length).toBe(588895);
      expect((await ctx.sb.readFile('big.txt', { maxBytes: 6 })).toString()).toBe('1\n2\n3\n');
    });

    it('keeps answering after a killed command', async () => {
      await sb.exec('sleep 10', { timeoutMs: 100 });
      expect((await sb.exec('echo fine')).stdout).toBe('fine\n');
    });
  });
}
