// The `bwrap` driver (default on Linux): each exec is one bubblewrap invocation over the rollout's
// workspace, as the sandbox's own uid, under rlimits and a seccomp filter. The command is PID 1 of
// its own PID namespace, so whatever it started (setsid daemons included) dies with it.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { argsPayload, BWRAP_FDS, bwrapArgs, hideArgs, osDirArgs, passwdFiles, type HideArgs } from './bwrap-args.js';
import { prlimitArgs } from './limits.js';
import { LocalDriver, type LocalDriverOptions } from './local-driver.js';
import { SANDBOX_PATH, type LocalDriverHooks } from './local-sandbox.js';
import { WORKSPACE_MOUNT } from './paths.js';
import { seccompFilter } from './seccomp.js';
import type { Workdir } from './workdir.js';
import type { SandboxSpec } from './types.js';

const run = promisify(execFile);

export const BWRAP = '/usr/bin/bwrap';

export class BwrapDriver extends LocalDriver {
  readonly name = 'bwrap' as const;
  private probe: Promise<boolean> | null = null;
  private readonly hide: HideArgs;
  /** null on an architecture we have no filter for: then the driver is not available. */
  private readonly seccomp = seccompFilter();

  constructor(opts: LocalDriverOptions) {
    super(opts);
    this.hide = hideArgs(opts.hiddenPaths ?? []);
  }

  /** bwrap is installed and can create the namespaces (user namespaces may be disabled), and we have a seccomp filter for this CPU. */
  available(): Promise<boolean> {
    if (!this.seccomp) return Promise.resolve(false);
    this.probe ??= run(BWRAP, ['--unshare-all', '--die-with-parent', '--as-pid-1', ...osDirArgs(), '--', '/usr/bin/true'], { timeout: 5000 })
      .then(() => true)
      .catch(() => false);
    return this.probe;
  }

  protected hooks(w: Workdir, spec: SandboxSpec): Omit<LocalDriverHooks, 'onDestroy'> {
    const ids = passwdFiles(w.meta.uid ?? process.getuid?.() ?? 0);
    const seccomp = this.seccomp ?? Buffer.alloc(0); // never empty: available() refused the driver
    return {
      wrap: (argv, cwd, env) => ({
        argv: ['prlimit', ...prlimitArgs(spec.limits), BWRAP, '--args', String(BWRAP_FDS.args), '--', ...argv],
        cwd: w.ws,
        env: { PATH: SANDBOX_PATH, HOME: WORKSPACE_MOUNT, LANG: 'C.UTF-8', TMPDIR: '/tmp', ...env },
        // fds 4, 5, 6, 7 in this order: BWRAP_FDS
        inputFds: [argsPayload(bwrapArgs({ ws: w.ws, tmp: w.tmp, shm: w.shm, cwd, hide: this.hide, readOnlyMounts: spec.readOnlyMounts ?? [] })), ids.passwd, ids.group, seccomp],
      }),
      // Nothing to sweep: the PID namespace dies with its PID 1 (--die-with-parent covers a killed
      // bwrap), taking setsid'd daemons with it. Skipping it saves a process spawn per exec.
      afterKill: async () => {},
    };
  }
}
