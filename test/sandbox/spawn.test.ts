// The Sandbox.spawn contract on every driver present: a long-running process with streaming stdio,
// the same isolation as an exec, killed whole by kill() or by the sandbox's destroy().
import { mkdtemp, rm, writeFile, chmod } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { selectDriver } from '../../src/sandbox/select.js';
import type { Sandbox, SandboxDriver } from '../../src/sandbox/types.js';
import { describeIf } from '../helpers/require.js';
import { DOCKER_IMAGE, driversPresent, pidsWith, spec, tempRoot, until } from './helpers.js';
import { runLabels } from '../helpers/run-label.js';

const present = await driversPresent();

const readers = new WeakMap<Readable, AsyncIterator<string>>();

/** The next line `stream` prints (lines that arrive together are kept for the next call). */
async function nextLine(stream: Readable): Promise<string> {
  let it = readers.get(stream);
  if (!it) {
    it = createInterface({ input: stream, crlfDelay: Infinity })[Symbol.asyncIterator]();
    readers.set(stream, it);
  }
  const r = await it.next();
  if (r.done) throw new Error('stream ended before a line');
  return r.value;
}


for (const name of ['process', 'bwrap', 'docker'] as const) {
  describeIf(present[name], `spawn on ${name}`, `${name} sandbox driver not available`)(`spawn contract (${name})`, () => {
    const ctx = {} as { driver: SandboxDriver; sb: Sandbox; tmp: Awaited<ReturnType<typeof tempRoot>>; shared: string };

    beforeAll(async () => {
      ctx.tmp = await tempRoot();
      // A host directory the sandbox may read (as a stdio server's install dir would be), never write.
      ctx.shared = await mkdtemp(join(tmpdir(), 'rft-spawn-ro-'));
      await chmod(ctx.shared, 0o755);
      await writeFile(join(ctx.shared, 'hello.txt'), 'from the host\n', { mode: 0o644 });
      ctx.driver = await selectDriver(name, { sandboxesRoot: ctx.tmp.root, instanceId: `spawn-${name}-${process.pid}`, dockerImage: DOCKER_IMAGE, dockerLabels: runLabels });
      ctx.sb = await ctx.driver.create(spec('trace_spawn', { readOnlyMounts: [ctx.shared], files: { 'in.txt': 'workspace file\n' } }));
    });
    afterAll(async () => {
      await ctx.sb?.destroy();
      await ctx.driver?.close?.();
      await ctx.tmp?.cleanup();
      await rm(ctx.shared, { recursive: true, force: true });
    });

    it('streams stdin and stdout both ways while the process runs', async () => {
      const p = await ctx.sb.spawn(['/bin/sh', '-c', 'while read l; do echo "got $l"; done']);
      p.stdin.write('one\n');
      expect(await nextLine(p.stdout)).toBe('got one');
      p.stdin.write('two\n');
      expect(await nextLine(p.stdout)).toBe('got two');
      p.stdin.end();
      expect(await p.exited).toEqual({ exitCode: 0, signal: null });
    });

    it('keeps stderr apart, runs in the workspace with the env it is given, and reports the exit code', async () => {
      const p = await ctx.sb.spawn(['/bin/sh', '-c', 'cat in.txt; echo "$GREETING" >&2; exit 7'], { env: { GREETING: 'hi' } });
      const [out, err] = await Promise.all([nextLine(p.stdout), nextLine(p.stderr)]);
      expect(out).toBe('workspace file');
      expect(err).toBe('hi');
      expect((await p.exited).exitCode).toBe(7);
    });

    it('sees a read-only mount at its host path and cannot write it', async () => {
      const p = await ctx.sb.spawn(['/bin/sh', '-c', `cat ${ctx.shared}/hello.txt; touch ${ctx.shared}/x 2>/dev/null && echo wrote || echo refused`]);
      expect(await nextLine(p.stdout)).toBe('from the host');
      expect(await nextLine(p.stdout)).toBe(name === 'process' ? (process.getuid?.() === 0 ? 'refused' : 'wrote') : 'refused');
      await p.exited;
    });

    it('kill() takes the process and everything it started', async () => {
      const marker = `4242.${name.length}${Date.now() % 1000}`;
      const p = await ctx.sb.spawn(['/bin/sh', '-c', `sleep ${marker} & sleep ${marker} & echo up; cat`]);
      expect(await nextLine(p.stdout)).toBe('up');
      await until(async () => (await pidsWith(marker)).length === 2);
      await p.kill();
      expect((await p.exited).exitCode === 0).toBe(false);
      // What kill() leaves is gone at once when quiet; an issue 26 run at load 20 passed 10 s on Docker.
      await until(async () => (await pidsWith(marker)).length === 0, 30_000);
    }, 60_000);

    // bwrap lost 91 of 300 such kills before its supervisor made the command's process group itself:
    // the kill reached the supervisor before the new process had made its group, signalled no group,
    // and the process ran on (a stdio server stopped as it started, an exec aborted before it began).
    // Docker lost them too: a kill before the process's pid line arrived killed nothing, and kill()
    // then closed the stream, which ends the call but not the process in the container. Docker's
    // starts and kills are engine requests of a few hundred ms each: fewer of them.
    const times = name === 'docker' ? 10 : 100;
    it('kill() right after the start takes the process, every time', { timeout: 180_000 }, async () => {
      const marker = String(100_000 + Math.floor(Math.random() * 100_000)); // sleep's seconds: its argument, found in /proc
      for (let i = 0; i < times; i++) {
        const p = await ctx.sb.spawn(['sleep', marker]);
        const killed = await Promise.race([p.kill().then(() => true), new Promise<false>((r) => setTimeout(() => r(false), 10_000))]);
        expect(killed, `kill ${i + 1} of ${times} did not end within 10 s`).toBe(true);
        await until(async () => (await pidsWith(marker)).length === 0, 10_000).catch(() => {
          throw new Error(`kill ${i + 1} of ${times} returned, and the process still runs`);
        });
      }
    });

    it('a process survives the execs that run beside it', async () => {
      const p = await ctx.sb.spawn(['/bin/sh', '-c', 'while read l; do echo "got $l"; done']);
      // After an exec that leaves a job behind, the drivers clean up the sandbox's leftovers.
      expect((await ctx.sb.exec('sleep 30 & echo started')).stdout).toBe('started\n');
      expect((await ctx.sb.exec('sleep 10', { timeoutMs: 100 })).timedOut).toBe(true);
      p.stdin.write('still here\n');
      expect(await nextLine(p.stdout)).toBe('got still here');
      await p.kill();
    });

    if (name !== 'process') {
      it('has the isolation of an exec: no network, no host home', async () => {
        const p = await ctx.sb.spawn(['/bin/sh', '-c', 'grep -c : /proc/net/dev; ls /root 2>&1 >/dev/null | head -c 0; test -e /root/.bashrc && echo host || echo isolated']);
        // One line per network interface: only loopback.
        expect(Number(await nextLine(p.stdout))).toBe(1);
        expect(await nextLine(p.stdout)).toBe('isolated');
        await p.exited;
      });
    }

    it("destroying the sandbox kills its live processes", async () => {
      const own = await ctx.driver.create(spec('trace_spawn_destroy'));
      const marker = `4343.${name.length}${Date.now() % 1000}`;
      const p = await own.spawn(['/bin/sh', '-c', `sleep ${marker} & echo up; cat`]);
      expect(await nextLine(p.stdout)).toBe('up');
      await own.destroy();
      await p.exited;
      await until(async () => (await pidsWith(marker)).length === 0);
      await expect(own.spawn(['true'])).rejects.toMatchObject({ code: 'RFT_ERR_SANDBOX' });
    });
  });
}
