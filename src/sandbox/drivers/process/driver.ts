// The `process` driver: a working directory per rollout and rlimits, no isolation at all. Commands
// see the whole host filesystem and network. It exists for development and for machines without
// bubblewrap or Docker, and is refused unless the server listens on loopback only.
import { realpathSync } from 'node:fs';
import { join, sep } from 'node:path';
import { isLoopback } from '../../../loopback.js';
import { errors } from '../../../errors.js';
import { prlimitArgs } from '../../workspace/limits.js';
import { LocalDriver } from '../../host/local-driver.js';
import { SANDBOX_PATH, type CommandRunner, type RunRequest } from '../../host/local-sandbox.js';
import { runProgram } from '../../host/run.js';
import { startProgram, type StartOptions } from '../../host/spawn.js';
import { reaperPrefix } from '../../host/reaper.js';
import { killAllOf } from '../../host/uids.js';
import type { Workdir } from '../../host/workdir.js';
import type { ExecResult, SandboxLimits, SandboxProcess } from '../../types.js';

/** Throws unless `host` is a loopback address: the process driver must never serve remote callers. */
export function assertProcessDriverAllowed(host: string): void {
  if (!isLoopback(host)) throw errors.processDriverNotAllowed(host);
}

/**
 * Commands as host programs (`prlimit ... argv`) in their own process group, under the reaper
 * (reaper.ts): what a command leaves, in its group or not (setsid), ends when it does, whatever else
 * of the sandbox runs. A killed exec's group dies with it (the reaper too); what left the group is
 * then reached by killing the sandbox uid, but only when nothing else of the sandbox runs (it would
 * die too). The next command waits for that sweep.
 */
class ProcessRunner implements CommandRunner {
  /** Execs and live spawned processes: a sweep of the sandbox uid must wait until it is alone. */
  private inflight = 0;
  private readonly processes = new Set<SandboxProcess>();
  private sweep: Promise<void> = Promise.resolve();

  constructor(private readonly w: Workdir) {}

  /** `reap`: run under the reaper (reaper.ts), so what the command leaves ends with it whatever else runs (execs, not spawned servers). */
  private start(argv: string[], cwd: string[], env: Record<string, string>, limits: SandboxLimits, reap = false): StartOptions {
    // No mount namespace here, so a cwd through a planted symlink must be refused on the host.
    const real = realpathSync(join(this.w.ws, ...cwd));
    if (real !== this.w.ws && !real.startsWith(this.w.ws + sep)) throw errors.pathEscape(cwd.join('/'));
    const uid = this.w.meta.uid;
    return {
      argv: ['prlimit', ...prlimitArgs(limits), ...(reap ? reaperPrefix() : []), ...argv],
      cwd: real,
      env: { PATH: SANDBOX_PATH, HOME: this.w.ws, LANG: 'C.UTF-8', ...env },
      ...(uid !== null ? { uid, gid: uid } : {}),
    };
  }

  async exec(argv: string[], cwd: string[], env: Record<string, string>, req: RunRequest): Promise<ExecResult> {
    this.inflight++;
    try {
      const uid = this.w.meta.uid;
      const program = this.start(argv, cwd, env, req.limits, true);
      await this.sweep;
      return await runProgram({
        ...program,
        timeoutMs: req.timeoutMs,
        maxOutputBytes: req.maxOutputBytes,
        resultChannel: req.resultChannel,
        ...(req.signal !== undefined ? { signal: req.signal } : {}),
        ...(req.stdin !== undefined ? { stdin: req.stdin } : {}),
        // In the background so the result is not delayed by it; the next exec waits for it.
        onKill: async () => {
          const alone = this.inflight <= 1;
          if (alone && uid !== null) this.sweep = killAllOf(uid).catch(() => {});
        },
      });
    } finally {
      this.inflight--;
    }
  }

  async spawn(argv: string[], cwd: string[], env: Record<string, string>, limits: SandboxLimits): Promise<SandboxProcess> {
    const program = this.start(argv, cwd, env, limits);
    await this.sweep;
    const proc = startProgram(program);
    // A live process counts as running, so no exec's sweep of the sandbox uid can take it down.
    this.inflight++;
    this.processes.add(proc);
    void proc.exited.then(() => {
      this.inflight--;
      this.processes.delete(proc);
    });
    return proc;
  }

  async close(): Promise<void> {
    await Promise.all([...this.processes].map((p) => p.kill()));
  }
}

export class ProcessDriver extends LocalDriver {
  readonly name = 'process' as const;

  async available(): Promise<boolean> {
    return true;
  }

  protected async runnerFor(w: Workdir): Promise<CommandRunner> {
    return new ProcessRunner(w);
  }
}
