// The `bwrap` driver (default on Linux): one sandbox per rollout, built once by bubblewrap (every
// namespace, the read-only view of the host, the tmpfs workspace, the seccomp filter) as the
// sandbox's own uid; each command enters it in PID, mount and IPC namespaces of its own, so whatever
// it started (setsid daemons included) dies with it. Every process is created by the driver's
// supervisor (supervisor/), a small C program, never by forking the server.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { errors } from '../../../errors.js';
import { hideArgs, osDirArgs, type HideArgs } from './args.js';
import { BWRAP, BwrapRunner } from './runner.js';
import { hostOpsFrom, type HostOps } from '../../host/host-ops.js';
import { LocalDriver, type LocalDriverOptions } from '../../host/local-driver.js';
import type { CommandRunner } from '../../host/local-sandbox.js';
import { tmpfsOptions } from '../../host/mount.js';
import { seccompFilter } from './seccomp.js';
import { supervisorBinary } from './supervisor/binary.js';
import { Supervisor } from './supervisor/client.js';
import { canSwitchUid, isSandboxUid } from '../../host/uids.js';
import type { Workdir } from '../../host/workdir.js';
import type { SandboxSpec } from '../../types.js';

const run = promisify(execFile);

export { BWRAP };

export interface BwrapDriverOptions extends LocalDriverOptions {
  /** Where the driver says why it is not available (a missing C compiler, user namespaces refused). */
  onUnavailable?: (why: string) => void;
  log?: import('pino').Logger;
}

export class BwrapDriver extends LocalDriver {
  readonly name = 'bwrap' as const;
  private probe: Promise<boolean> | null = null;
  private readonly hide: HideArgs;
  /** null on an architecture we have no filter for: then the driver is not available. */
  private readonly seccomp = seccompFilter();
  private supervisor: Supervisor | null = null;
  private hostOps: HostOps | null = null;

  constructor(private readonly bwrapOpts: BwrapDriverOptions) {
    super(bwrapOpts);
    this.hide = hideArgs(bwrapOpts.hiddenPaths ?? []);
  }

  /**
   * bwrap is installed and can create the namespaces (user namespaces may be disabled), we have a
   * seccomp filter for this CPU, and the supervisor's executable exists (built by `npm run build`, or
   * compiled now).
   */
  available(): Promise<boolean> {
    this.probe ??= (async () => {
      const why = await this.unavailable();
      this.why = why;
      if (why) this.bwrapOpts.onUnavailable?.(why);
      return why === null;
    })();
    return this.probe;
  }


  private async unavailable(): Promise<string | null> {
    if (!this.seccomp) return `no seccomp filter for ${process.arch}`;
    try {
      // A loaded host (a burst of another server's sandboxes) can take seconds: only a refusal, or
      // no answer in 30 s, makes the driver unavailable.
      await run(BWRAP, ['--unshare-all', '--die-with-parent', '--as-pid-1', ...osDirArgs(), '--', '/usr/bin/true'], { timeout: 30_000 });
    } catch (e) {
      if ((e as { killed?: boolean }).killed) return 'bwrap did not run /usr/bin/true within 30 s';
      return 'bwrap cannot create the namespaces here (is it installed, are user namespaces allowed?)';
    }
    try {
      this.binary = await supervisorBinary();
    } catch (e) {
      return `the sandbox supervisor could not be built (it needs a C compiler, cc): ${(e as Error).message.split('\n')[0]}`;
    }
    return null;
  }

  private why: string | null = null;
  private binary: string | null = null;

  /** The supervisor, started on first use. */
  private async sup(): Promise<Supervisor> {
    await this.available();
    if (!this.binary || !this.seccomp) throw errors.sandboxFailed(`the bwrap driver is not available: ${this.why ?? 'unknown'}`);
    this.supervisor ??= new Supervisor(this.binary, this.seccomp, this.bwrapOpts.log);
    return this.supervisor;
  }

  protected override get ops(): HostOps {
    this.hostOps ??= hostOpsFrom({
      mountTmpfs: async (dir, cap, owner) => (await this.sup()).mountTmpfs(dir, tmpfsOptions(cap, owner)),
      unmount: async (target) => (await this.sup()).unmount(target),
      killAllOf: async (uid) => {
        if (isSandboxUid(uid) && canSwitchUid()) await (await this.sup()).killUid(uid);
      },
    });
    return this.hostOps;
  }

  protected async runnerFor(w: Workdir, spec: SandboxSpec): Promise<CommandRunner> {
    return BwrapRunner.start(await this.sup(), w, { hide: this.hide, seccomp: this.seccomp ?? Buffer.alloc(0), readOnlyMounts: spec.readOnlyMounts ?? [] });
  }

  override async close(): Promise<void> {
    await super.close();
    await this.supervisor?.close();
    this.supervisor = null;
    this.hostOps = null;
    this.probe = null;
  }
}
