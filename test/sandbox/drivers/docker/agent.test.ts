// The Docker driver's in-container agent (src/sandbox/drivers/docker/agent/): every call of a
// rollout over one channel, no engine exec per call, with the exec path's guarantees; and attacked
// as a rollout would: its descriptors, its memory, killing or stopping it. Real engines: runc and runsc.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { DockerApi } from '../../../../src/sandbox/drivers/docker/api.js';
import { DockerDriver } from '../../../../src/sandbox/drivers/docker/driver.js';
import type { DockerSandbox } from '../../../../src/sandbox/drivers/docker/sandbox.js';
import type { Sandbox, SandboxDriver } from '../../../../src/sandbox/types.js';
import { describeIf } from '../../../helpers/require.js';
import { runLabels } from '../../../helpers/run-label.js';
import { parseDockerHosts } from '../../../../src/sandbox/drivers/docker/hosts.js';
import { DOCKER_IMAGE, driversPresent, driverWithSandbox, GVISOR_ENGINE, spec } from '../../helpers.js';

const present = await driversPresent();

async function onEngine<T>(sb: Sandbox, fn: (api: DockerApi, container: string) => Promise<T>): Promise<T> {
  const d = sb as unknown as DockerSandbox;
  const api = new DockerApi(d.engine.api.endpoint);
  try {
    return await fn(api, d.container);
  } finally {
    await api.close();
  }
}

/** The execs the engine created in the container since `since` (s), from its event log. */
const execsSince = (sb: Sandbox, since: number): Promise<number> =>
  onEngine(sb, async (api, c) => {
    const filters = encodeURIComponent(JSON.stringify({ type: ['container'], container: [c] }));
    const res = await api.call<unknown>('GET', `/events?since=${since}&until=${Math.ceil(Date.now() / 1000) + 1}&filters=${filters}`);
    const text = typeof res.body === 'string' ? res.body : JSON.stringify(res.body ?? '');
    return (text.match(/"Action":"exec_create/g) ?? []).length;
  });

/** Command lines of the container's live processes that contain `word` (read from inside). */
const procsWith = (word: string): string =>
  `for f in /proc/[0-9]*/cmdline; do c=$(tr '\\0' ' ' < $f 2>/dev/null); case "$c" in *"${word}"*) echo "$c";; esac; done | grep -v 'for f in' || true`;

for (const name of ['docker', 'gvisor'] as const) {
  describeIf(present[name], `${name} sandbox driver`, `${name} sandbox driver not available`)(`the sandbox agent (${name})`, () => {
    const ctx = driverWithSandbox(name, spec('trace_agent_base'));
    const agentOf = async (sb: Sandbox) => {
      const ch = await (sb as DockerSandbox).channel();
      if (!ch) throw new Error('the agent did not start');
      return ch;
    };

    it('takes every call after its start, none through the engine', async () => {
      const sb = ctx.sb;
      await agentOf(sb);
      const before = await execsSince(sb, 0);
      const r = await sb.exec('echo hi; echo err >&2; exit 3');
      expect(r).toMatchObject({ exitCode: 3, stdout: 'hi\n', stderr: 'err\n', timedOut: false });
      await sb.writeFile('d/a.txt', Buffer.from([0, 1, 2, 255]));
      expect([...(await sb.readFile('d/a.txt'))]).toEqual([0, 1, 2, 255]);
      expect((await sb.listFiles('d')).map((e) => e.path)).toEqual(['d/a.txt']);
      const p = await sb.spawn(['cat']);
      const got = new Promise<string>((resolve) => p.stdout.once('data', (d: Buffer) => resolve(d.toString())));
      p.stdin.write('ping\n');
      expect(await got).toBe('ping\n');
      await p.kill();
      expect(await execsSince(sb, 0)).toBe(before);
    }, 60_000);

    it('runs commands as the sandbox uid, from their directory, with their env, stdin and output cap', async () => {
      const sb = ctx.sb;
      const uid = await onEngine(sb, async (api, c) => (await api.call<{ Config: { Labels: Record<string, string> } }>('GET', `/containers/${c}/json`)).body.Config.Labels['rft-endpoints.uid']);
      await sb.exec('mkdir -p sub');
      const r = await sb.exec('id -u; id -g; pwd; echo $FOO; cat', { cwd: 'sub', env: { FOO: 'bar' }, stdin: 'in' });
      expect(r.stdout).toBe(`${uid}\n${uid}\n/workspace/sub\nbar\nin`);
      const big = await sb.exec('head -c 100000 /dev/zero; echo done >&2', { maxOutputBytes: 1000 });
      expect(big.stdout.length).toBe(1000);
      expect(big.stdoutTruncated).toBe(true);
    }, 60_000);

    it('gives the result channel to the command alone, and it only its stdio and that channel', async () => {
      const sb = ctx.sb;
      // Open descriptors by trying each (gVisor refuses /proc/self/fd to the sandbox uid, agent or not).
      const fds = 'for i in 0 1 2 3 4 5 6 7 8 9 10 11 12 20 50 100 255 1000 1023; do (: >&$i) 2>/dev/null && echo $i; done';
      const r = await sb.exec(`echo verdict >&$RFT_RESULT_FD; ${fds}`, { resultChannel: true });
      expect(r.result).toBe('verdict\n');
      expect(r.stdout.split('\n').filter(Boolean)).toEqual(['0', '1', '2', '3']);
      const plain = await sb.exec(fds);
      expect(plain.stdout.split('\n').filter(Boolean)).toEqual(['0', '1', '2']);
    }, 60_000);

    it('ends a command with its whole tree: on timeout, and what it left after a normal end', async () => {
      const sb = ctx.sb;
      const r = await sb.exec('setsid sh -c "sleep 301" >/dev/null 2>&1 & (sleep 302 &) ; sleep 303', { timeoutMs: 1_500 });
      expect(r).toMatchObject({ timedOut: true, signal: 'SIGKILL', exitCode: null });
      await sb.exec('setsid sh -c "sleep 304" >/dev/null 2>&1 & (sleep 305 &) ; echo left');
      const left = await sb.exec(procsWith('sleep 30'));
      expect(left.stdout).toBe('');
    }, 60_000);

    it('spares a running command and a spawned process when another command ends', async () => {
      const sb = ctx.sb;
      const server = await sb.spawn(['sh', '-c', 'sleep 306 & cat']);
      const long = sb.exec('sleep 2; echo long-done', { timeoutMs: 20_000 });
      await sb.exec('sleep 307 & echo short');
      expect((await long).stdout).toBe('long-done\n');
      const alive = await sb.exec(procsWith('sleep 30'));
      expect(alive.stdout).toContain('sleep 306');
      expect(alive.stdout).not.toContain('sleep 307');
      await server.kill();
      expect((await sb.exec(procsWith('sleep 30'))).stdout).toBe('');
    }, 60_000);

    it('cannot be read, traced or written to by a command', async () => {
      const sb = ctx.sb;
      const { pid } = await agentOf(sb);
      const r = await sb.exec(
        `ls /proc/${pid}/fd >/dev/null 2>&1 && echo fd-open; [ -n "$(tr -d '\\0' < /proc/${pid}/environ 2>/dev/null)" ] && echo environ-shown; ` +
          `head -c 1 /proc/${pid}/mem >/dev/null 2>&1 && echo mem-open; echo x > /proc/${pid}/fd/0 2>/dev/null && echo stdin-open; ` +
          `python3 -c "import ctypes; l=ctypes.CDLL(None, use_errno=True); print('ptrace', l.ptrace(16, ${pid}, 0, 0), ctypes.get_errno())"`,
      );
      expect(r.stdout).toMatch(/^ptrace -1 1\n$/); // EPERM, nothing else opened
    }, 60_000);

    it('a rollout that kills its agent gets its own failure (410) for that call and every later one, never a hang', async () => {
      const sb = await ctx.driver.create(spec('trace_agent_killed'));
      try {
        const { pid } = await agentOf(sb);
        const t0 = Date.now();
        const e = await sb.exec(`kill -9 ${pid}; sleep 20`, { timeoutMs: 30_000 }).catch((err: unknown) => err);
        expect(e).toMatchObject({ code: 'RFT_ERR_SANDBOX_ENDED_BY_ROLLOUT', statusCode: 410 });
        expect(Date.now() - t0).toBeLessThan(15_000);
        await expect(sb.exec('echo again')).rejects.toMatchObject({ code: 'RFT_ERR_SANDBOX_ENDED_BY_ROLLOUT' });
        await expect(sb.readFile('x')).rejects.toMatchObject({ code: 'RFT_ERR_SANDBOX_ENDED_BY_ROLLOUT' });
      } finally {
        await sb.destroy();
      }
    }, 60_000);

    it('a rollout that stops its agent gets its own failure (410) once the call times out, never a hang', async () => {
      const sb = await ctx.driver.create(spec('trace_agent_stopped'));
      try {
        const { pid } = await agentOf(sb);
        const e = await sb.exec(`kill -STOP ${pid}; sleep 20`, { timeoutMs: 1_000 }).catch((err: unknown) => err);
        expect(e).toMatchObject({ code: 'RFT_ERR_SANDBOX_ENDED_BY_ROLLOUT', statusCode: 410 });
        await expect(sb.exec('echo again')).rejects.toMatchObject({ code: 'RFT_ERR_SANDBOX_ENDED_BY_ROLLOUT' });
      } finally {
        await sb.destroy();
      }
    }, 60_000);

    it('cannot reach another sandbox through its agent', async () => {
      const other = await ctx.driver.create(spec('trace_agent_other'));
      try {
        const { pid } = await agentOf(other);
        await other.writeFile('secret.txt', 'other');
        // The other container's agent pid names nothing here (its own PID namespace), and its workspace is not mounted.
        const r = await ctx.sb.exec(`cat /proc/${pid}/cmdline 2>/dev/null | tr '\\0' ' '; ls / ; cat /workspace/secret.txt 2>&1 || true`);
        expect(r.stdout).not.toContain('other');
        expect((await other.exec('cat secret.txt')).stdout).toBe('other');
      } finally {
        await other.destroy();
      }
    }, 60_000);
  });

  describeIf(present[name], `${name} sandbox driver`, `${name} sandbox driver not available`)(`the exec path without the agent (${name})`, () => {
    let driver: SandboxDriver;
    let sb: Sandbox;
    beforeAll(async () => {
      const instanceId = `agentless-${process.pid}`;
      driver =
        name === 'gvisor'
          ? new DockerDriver({ instanceId, labels: runLabels, image: DOCKER_IMAGE, hosts: parseDockerHosts({ cap: 1000, hosts: GVISOR_ENGINE }), runtime: 'runsc', agent: false })
          : new DockerDriver({ instanceId, labels: runLabels, image: DOCKER_IMAGE, agent: false });
      sb = await driver.create(spec('trace_agentless'));
    }, 120_000);
    afterAll(async () => {
      await sb?.destroy();
      await driver?.close?.();
    });

    it('runs each call as an engine exec, with the same results', async () => {
      expect(await (sb as DockerSandbox).channel()).toBeNull();
      const before = await execsSince(sb, 0);
      expect(await sb.exec('echo hi; exit 3')).toMatchObject({ exitCode: 3, stdout: 'hi\n' });
      await sb.writeFile('a.txt', 'x');
      expect((await sb.readFile('a.txt')).toString()).toBe('x');
      expect(await execsSince(sb, 0)).toBeGreaterThanOrEqual(before + 3);
    }, 60_000);
  });
}
