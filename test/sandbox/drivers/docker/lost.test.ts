// Whose failure a Docker sandbox that stopped is (docs/sandbox.md, Docker, "A stopped container"):
// taken down by the rollout's own commands (on gVisor, a memory hog gets the sandbox's kernel killed:
// the engine logs an oom event at its death; a fork bomb makes runsc fail and exit by itself while
// the command runs) is the model's, RFT_ERR_SANDBOX_ENDED_BY_ROLLOUT (410,
// an observation it is charged for); killed or removed from outside, ours, RFT_ERR_SANDBOX_LOST
// (503, the ledger un-begins the call). Real engines: runc and runsc.
import { expect, it, vi } from 'vitest';
import { DockerApi } from '../../../../src/sandbox/drivers/docker/api.js';
import { PROCESS_LIMIT_FULL, PROCESS_LIMIT_MESSAGE, STOPPED_STATE, type DockerSandbox } from '../../../../src/sandbox/drivers/docker/sandbox.js';
import type { Sandbox, SandboxProcess } from '../../../../src/sandbox/types.js';
import { failureOfToolError } from '../../../../src/metrics/outcomes.js';
import { describeIf } from '../../../helpers/require.js';
import { driversPresent, driverWithSandbox, spec, testLimits } from '../../helpers.js';

const present = await driversPresent();
const HOG = ['python3', '-c', 'x = bytearray(3 * 1024 ** 3); x[::4096] = b"y" * len(x[::4096]); print("allocated")'];

async function onEngine(sb: Sandbox, fn: (api: DockerApi, container: string) => Promise<unknown>): Promise<void> {
  const d = sb as unknown as DockerSandbox;
  const api = new DockerApi(d.engine.api.endpoint);
  try {
    await fn(api, d.container);
  } finally {
    await api.close();
  }
}

for (const name of ['docker', 'gvisor'] as const) {
  describeIf(present[name], `${name} sandbox driver`, `${name} sandbox driver not available`)(`a sandbox that is gone (${name})`, () => {
    const ctx = driverWithSandbox(name, spec('trace_lost_base', { limits: { ...testLimits, memoryBytes: 256 * 1024 * 1024 } }));
    const fresh = (traceId: string) => ctx.driver.create(spec(traceId, { limits: { ...testLimits, memoryBytes: 256 * 1024 * 1024 } }));

    it('is ours (RFT_ERR_SANDBOX_LOST, 503) when its container is killed from outside', async () => {
      const sb = await fresh('trace_lost_killed');
      try {
        await sb.writeFile('kept.txt', 'work');
        await onEngine(sb, (api, c) => api.call('POST', `/containers/${c}/kill`));
        const e = await sb.exec('cat kept.txt').catch((err: unknown) => err);
        expect(e).toMatchObject({ code: 'RFT_ERR_SANDBOX_LOST', statusCode: 503 });
        expect(failureOfToolError(e).kind).toBe('infra');
      } finally {
        await sb.destroy();
      }
    });

    it('is ours, not an outcome shown to the model, when its container is killed from outside while a command runs', async () => {
      const sb = await fresh('trace_lost_killed_running');
      try {
        const running = sb.exec('echo started; sleep 30', { timeoutMs: 40_000 }).catch((err: unknown) => err);
        await new Promise((r) => setTimeout(r, 1_500));
        await onEngine(sb, (api, c) => api.call('POST', `/containers/${c}/kill`));
        const e = await running;
        expect(e, JSON.stringify(e)).toMatchObject({ code: 'RFT_ERR_SANDBOX_LOST', statusCode: 503 });
      } finally {
        await sb.destroy();
      }
    }, 60_000);

    it('is ours, not a failure of the driver, when the engine dropped the exec of a command whose container went before its end was read', async () => {
      const sb = await fresh('trace_lost_exec_dropped');
      const api = (sb as unknown as DockerSandbox).engine.api;
      const call = api.call.bind(api);
      let removed: Promise<unknown> | undefined;
      // A loaded server reads the exec's end only after the container is removed, and its execs with
      // it (the engine then answers "No such exec instance", as it did under gVisor after a fork bomb).
      const late = vi.spyOn(api, 'call').mockImplementation(async (...args: Parameters<typeof api.call>) => {
        if (args[0] === 'GET' && /^\/exec\/[^/]+\/json$/.test(args[1])) await removed;
        return call(...args);
      });
      // Without the engine's die event (the event stream was down then), which would end the call
      // before the read: the read itself must tell.
      const unwatched = vi.spyOn((sb as unknown as DockerSandbox).engine.events, 'onDeath').mockReturnValue(() => {});
      try {
        const running = sb.exec('echo started; sleep 30', { timeoutMs: 10_000 }).catch((err: unknown) => err);
        await new Promise((r) => setTimeout(r, 1_500));
        removed = onEngine(sb, (a, c) => a.call('DELETE', `/containers/${c}?force=true`));
        const e = await running;
        expect(e, JSON.stringify(e)).toMatchObject({ code: 'RFT_ERR_SANDBOX_LOST', statusCode: 503 });
      } finally {
        late.mockRestore();
        unwatched.mockRestore();
        await sb.destroy();
      }
    }, 60_000);

    it('is ours when a process (an MCP server) is started in a container killed from outside', async () => {
      const sb = await fresh('trace_lost_spawn_refused');
      try {
        await onEngine(sb, (api, c) => api.call('POST', `/containers/${c}/kill`));
        const started = await sb.spawn(['sleep', '60']).catch((err: unknown) => err);
        // Refused at once (the exec path, or an agent that already saw its container go), or, over an
        // agent whose stream the runtime has not closed yet (gVisor), a process whose end is the sandbox's:
        // ours either way, never the process's own end shown to the model.
        const e =
          started instanceof Error || (started as { code?: string }).code !== undefined
            ? started
            : await (async () => {
                const p = started as SandboxProcess;
                await p.exited;
                return p.endedBySandbox?.();
              })();
        expect(e, JSON.stringify(e)).toMatchObject({ code: 'RFT_ERR_SANDBOX_LOST', statusCode: 503 });
      } finally {
        await sb.destroy();
      }
    });

    it("is the model's outcome when its command dies of a signal in a container that lives on", async () => {
      const sb = await fresh('trace_lost_signalled');
      try {
        expect(await sb.exec('echo before; kill -9 $$')).toMatchObject({ exitCode: 137, stdout: 'before\n', timedOut: false });
        expect(await sb.exec(['python3', '-c', 'import os, signal; os.kill(os.getpid(), signal.SIGSEGV)'])).toMatchObject({ exitCode: 139 });
      } finally {
        await sb.destroy();
      }
    });

    it("ends a spawned process (an MCP server's) with the sandbox's error when its container is killed from outside, and with its own end otherwise", async () => {
      const sb = await fresh('trace_lost_spawned');
      try {
        const own = await sb.spawn(['sh', '-c', 'echo $$ > own.pid; exec sleep 60']);
        for (let i = 0; i < 100 && (await sb.exec('test -s own.pid')).exitCode !== 0; i++) await new Promise((r) => setTimeout(r, 50));
        expect(await sb.exec('kill -KILL $(cat own.pid)')).toMatchObject({ exitCode: 0 });
        expect(await own.exited).toEqual({ exitCode: null, signal: 'SIGKILL' });
        expect(await own.endedBySandbox!()).toBeUndefined();
        const server = await sb.spawn(['sh', '-c', 'echo up; exec sleep 60']);
        const stopped = await sb.spawn(['sh', '-c', 'exec sleep 60']);
        await stopped.kill();
        expect(await stopped.endedBySandbox!()).toBeUndefined();
        await onEngine(sb, (api, c) => api.call('POST', `/containers/${c}/kill`));
        const end = await server.endedBySandbox!();
        expect(end, JSON.stringify(await server.exited)).toMatchObject({ code: 'RFT_ERR_SANDBOX_LOST', statusCode: 503 });
      } finally {
        await sb.destroy();
      }
    }, 60_000);

    it('is ours when its container is removed from outside', async () => {
      const sb = await fresh('trace_lost_removed');
      try {
        await onEngine(sb, (api, c) => api.call('DELETE', `/containers/${c}?force=true&v=true`));
        await expect(sb.exec('true')).rejects.toMatchObject({ code: 'RFT_ERR_SANDBOX_LOST', statusCode: 503 });
      } finally {
        await sb.destroy();
      }
    });

    if (name === 'gvisor') {
      it("is the model's (RFT_ERR_SANDBOX_ENDED_BY_ROLLOUT, 410) when its own memory hog got the sandbox killed, on every later call too", async () => {
        const sb = await fresh('trace_lost_hog');
        try {
          // Its own call: an outcome, or, if the sandbox died under it, the same classification, at the
          // death: gVisor keeps the stream of a command whose sandbox kernel was killed open, and the
          // call ended only at its timeout and the give-up after it (40 s + 15 s here) before the
          // container's die event ended it.
          const t0 = Date.now();
          const own = await sb.exec(HOG, { timeoutMs: 40_000 }).catch((err: unknown) => err);
          if (own instanceof Error) {
            expect(own, JSON.stringify({ ...own, message: own.message })).toMatchObject({ code: 'RFT_ERR_SANDBOX_ENDED_BY_ROLLOUT', statusCode: 410 });
            expect(Date.now() - t0).toBeLessThan(25_000);
          }
          // The bomb takes gVisor's kernel down in most runs, not all (a CI run's sandbox survived):
          // either the sandbox answers, or it is gone by the rollout's doing; never ours (a 503 a
          // policy could provoke to have its rollout discarded).
          const e = await sb.exec('echo after').catch((err: unknown) => err);
          if ((e as { stdout?: string }).stdout === 'after\n') {
            // it survived: it goes on answering as a live sandbox
            expect(e).toMatchObject({ exitCode: 0 });
            await expect(sb.readFile('anything')).rejects.toMatchObject({ code: 'RFT_ERR_NOT_FOUND' });
          } else {
            expect(e, JSON.stringify({ ...(e as object), message: (e as Error).message })).toMatchObject({ code: 'RFT_ERR_SANDBOX_ENDED_BY_ROLLOUT', statusCode: 410 });
            expect(failureOfToolError(e).kind).toBe('model');
            await expect(sb.readFile('anything')).rejects.toMatchObject({ code: 'RFT_ERR_SANDBOX_ENDED_BY_ROLLOUT' });
          }
        } finally {
          await sb.destroy();
        }
      }, 120_000);

      it("is still the model's when the engine's event log has moved past the oom by the time it is classified", async () => {
        // The engine replays past events from a bounded log (the last 256 on this engine's version),
        // and every exec adds three (create, start, die). Under gVisor, its death missed on the event
        // stream (the stream was down then: here, the watch is turned off), the hog's own call stays
        // open until its timeout and the give-up after it, so the death is classified tens of seconds
        // later: other rollouts' calls meanwhile must not turn this zero into a discarded rollout.
        const sb = await fresh('trace_lost_hog_later');
        const unwatched = vi.spyOn((sb as unknown as DockerSandbox).engine.events, 'onDeath').mockReturnValue(() => {});
        try {
          const hog = sb.exec(HOG, { timeoutMs: 40_000 }).catch((err: unknown) => err);
          let died = false;
          await onEngine(sb, async (api, c) => {
            const end = Date.now() + 30_000;
            while (!died && Date.now() < end) {
              const info = await api.call<{ State?: { Running?: boolean } }>('GET', `/containers/${c}/json`, undefined, { ok: [404] });
              died = info.status === 404 || info.body.State?.Running === false;
              if (!died) await new Promise((r) => setTimeout(r, 200));
            }
          });
          if (!died) {
            await hog; // it survived (see above): nothing to classify
            return;
          }
          // 150 execs in another sandbox on the same engine: 450 events, the oom's long gone from the log.
          await onEngine(ctx.sb, async (api, c) => {
            const one = async (): Promise<void> => {
              const made = await api.call<{ Id: string }>('POST', `/containers/${c}/exec`, { Cmd: ['true'] });
              await api.call('POST', `/exec/${made.body.Id}/start`, { Detach: true });
            };
            for (let round = 0; round < 25; round++) await Promise.all(Array.from({ length: 6 }, one));
          });
          // Whichever call finds it gone first classifies it, after the flood: the hog's own (its stream
          // stayed open until the timeout and the give-up) or, when runsc ended that exec at the death
          // (exit 128, its own words on stderr: a command's outcome), the next one.
          const next = sb.exec('echo after').catch((err: unknown) => err);
          const e = await hog;
          if (e instanceof Error) expect(e, JSON.stringify({ ...e, message: e.message })).toMatchObject({ code: 'RFT_ERR_SANDBOX_ENDED_BY_ROLLOUT', statusCode: 410 });
          else expect(e).toMatchObject({ exitCode: expect.any(Number) as number });
          const after = await next;
          expect(after, JSON.stringify({ ...(after as object), message: (after as Error).message })).toMatchObject({ code: 'RFT_ERR_SANDBOX_ENDED_BY_ROLLOUT', statusCode: 410 });
        } finally {
          unwatched.mockRestore();
          await sb.destroy();
        }
      }, 120_000);

      it("is the model's when its own fork bomb makes the sandbox's kernel fail (runsc exits by itself, no oom event)", async () => {
        const sb = await fresh('trace_lost_bomb');
        try {
          await sb.exec('f(){ f | f & }; f; sleep 30', { timeoutMs: 2_000 }).catch(() => undefined);
          // The bomb takes gVisor's kernel down in most runs, not all (a CI run's sandbox survived):
          // either the sandbox answers (the command runs, cannot fork yet, times out, or runsc
          // refuses to start it with EAGAIN, "try again", exit 126, while the bomb's processes still
          // fill the sandbox's process limit and are being killed: the model's own doing, read as
          // output and charged), or it is gone by the rollout's doing; never ours (a 503 a policy
          // could provoke to have its rollout discarded).
          const e = await sb.exec('echo after').catch((err: unknown) => err);
          const ran = e as { exitCode?: number | null; stdout?: string; stderr?: string; timedOut?: boolean };
          const refused = ran.exitCode === 126 && ran.stderr === PROCESS_LIMIT_MESSAGE;
          if ('exitCode' in ran) expect(ran.stdout === 'after\n' || /fork/i.test(ran.stderr ?? '') || ran.timedOut || refused, JSON.stringify(ran)).toBe(true);
          else expect(e).toMatchObject({ code: 'RFT_ERR_SANDBOX_ENDED_BY_ROLLOUT', statusCode: 410 });
        } finally {
          await sb.destroy();
        }
      }, 120_000);

      it("tells the model its processes fill the sandbox's process limit when gVisor cannot start a command, in its own words", async () => {
        const sb = await fresh('trace_lost_full');
        try {
          // Processes of the sandbox uid up to its limit (gVisor's RLIMIT_NPROC), kept full while this exec
          // runs: a slot that frees is taken again (a shell would exit at its first "Cannot fork", and its
          // wrapper then sweep what it started). An exec that gets in first can only fail to fork.
          const fill = 'import os, time\nend = time.time() + 20\nwhile time.time() < end:\n  try:\n    if os.fork() == 0:\n      time.sleep(max(0, end - time.time())); os._exit(0)\n  except OSError:\n    time.sleep(0.01)';
          const filling = sb.exec(['python3', '-c', fill], { timeoutMs: 25_000 }).catch((e: unknown) => e);
          let ran: { exitCode: number | null; stdout: string; stderr: string; durationMs: number } | undefined;
          const tries: string[] = [];
          await vi.waitFor(
            async () => {
              ran = await sb.exec('echo after');
              tries.push(`${ran.exitCode} in ${ran.durationMs} ms: ${JSON.stringify((ran.stdout + ran.stderr).slice(0, 100))}`);
              if (ran.exitCode !== 126) expect(ran.stdout === 'after\n' || /Cannot fork/.test(ran.stderr), JSON.stringify(ran)).toBe(true);
              expect(ran.exitCode, JSON.stringify(ran)).toBe(126);
            },
            { timeout: 15_000, interval: 200 },
          ).catch(async (e: unknown) => {
            throw new Error(`${String(e)}; tries: ${tries.join('; ')}; the filling command: ${JSON.stringify(await filling)}`);
          });
          expect(ran).toMatchObject({ stdout: '', stderr: PROCESS_LIMIT_MESSAGE });
          await filling;
        } finally {
          await sb.destroy();
        }
      }, 60_000);
    }
  });
}

it("recognises both runtimes' refusal of an exec into a stopping container, and nothing else", () => {
  // runc, then runsc (gVisor: the words a CI run got back from a memory hog's sandbox).
  expect(STOPPED_STATE.test('OCI runtime exec failed: exec failed: cannot exec in a stopped state: unknown')).toBe(true);
  expect(
    STOPPED_STATE.test('OCI runtime exec failed: executing processes for container: cannot execute in container "cb0600a39e5533921b063c6d3ea811345b634ec78ad59ef0a2253d2a15843533" in state stopped: unknown'),
  ).toBe(true);
  expect(STOPPED_STATE.test('OCI runtime exec failed: exec failed: unable to start container process: exec: "nope": executable file not found in $PATH: unknown')).toBe(false);
});

it('recognises a runtime that cannot start a process for lack of room, and not a command that failed', () => {
  expect(PROCESS_LIMIT_FULL.test('OCI runtime exec failed: exec failed: unable to start container process: in sandbox: try again: unknown')).toBe(true);
  expect(PROCESS_LIMIT_FULL.test('OCI runtime exec failed: exec failed: fork/exec /bin/sh: resource temporarily unavailable: unknown')).toBe(true);
  expect(PROCESS_LIMIT_FULL.test('sh: 1: Cannot fork: try again')).toBe(false);
  expect(PROCESS_LIMIT_FULL.test(STOPPED_STATE.source)).toBe(false);
  expect(PROCESS_LIMIT_MESSAGE).not.toMatch(/rft-|printf|\$\$/);
});
