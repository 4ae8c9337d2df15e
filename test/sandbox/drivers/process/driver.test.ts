import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync } from 'node:fs';
import { assertProcessDriverAllowed, ProcessDriver } from '../../../../src/sandbox/drivers/process/driver.js';
import { spec, tempRoot } from '../../helpers.js';

describe('process driver', () => {
  let root: Awaited<ReturnType<typeof tempRoot>>;
  let driver: ProcessDriver;
  beforeAll(async () => {
    root = await tempRoot();
    driver = new ProcessDriver({ sandboxesRoot: root.root, instanceId: 'test-process' });
  });
  afterAll(() => root.cleanup());

  it('runs a command in the rollout workspace with its inline files', async () => {
    const sb = await driver.create(spec('trace_p1', { files: { 'notes/a.txt': 'hello' } }));
    const r = await sb.exec('cat notes/a.txt && printf " from %s" "$(basename "$PWD")"');
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toMatch(/^hello from ws$/);
    await sb.destroy();
  });

  it('does not pass the server environment to commands', async () => {
    process.env.RFT_TEST_SECRET = 'do-not-leak';
    const sb = await driver.create(spec('trace_p2'));
    const r = await sb.exec('env');
    expect(r.stdout).not.toContain('do-not-leak');
    expect(r.stdout).toContain('PATH=');
    await sb.destroy();
  });

  it('runs in a workspace-relative cwd and refuses one outside the workspace', async () => {
    const sb = await driver.create(spec('trace_p3', { files: { 'sub/x': '1' } }));
    expect((await sb.exec('ls', { cwd: 'sub' })).stdout.trim()).toBe('x');
    await expect(sb.exec('ls', { cwd: '../..' })).rejects.toMatchObject({ code: 'RFT_ERR_PATH_ESCAPE' });
    await sb.exec('ln -s / up');
    await expect(sb.exec('ls', { cwd: 'up' })).rejects.toMatchObject({ code: 'RFT_ERR_PATH_ESCAPE' });
    await sb.destroy();
  });

  it('reports a timeout and kills the command at the wall-clock limit', async () => {
    const sb = await driver.create(spec('trace_p4'));
    const r = await sb.exec('sleep 30', { timeoutMs: 200 });
    expect(r.timedOut).toBe(true);
    expect(r.durationMs).toBeLessThan(5_000);
    await sb.destroy();
  });

  it('passes stdin to the command', async () => {
    const sb = await driver.create(spec('trace_p5'));
    expect((await sb.exec(['cat'], { stdin: 'from stdin' })).stdout).toBe('from stdin');
    await sb.destroy();
  });

  it('removes the workspace directory on destroy', async () => {
    const sb = await driver.create(spec('trace_p6', { files: { a: 'x' } }));
    const out = (await sb.exec('pwd')).stdout.trim();
    expect(existsSync(out)).toBe(true);
    await sb.destroy();
    expect(existsSync(out)).toBe(false);
  });

  it('is allowed only on loopback hosts', () => {
    expect(() => assertProcessDriverAllowed('127.0.0.1')).not.toThrow();
    expect(() => assertProcessDriverAllowed('::1')).not.toThrow();
    expect(() => assertProcessDriverAllowed('0.0.0.0')).toThrow(expect.objectContaining({ code: 'RFT_ERR_SANDBOX_PROCESS_DRIVER' }));
  });
});
