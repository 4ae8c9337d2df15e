// The `bwrap` driver (default on Linux): each exec is one bubblewrap invocation over the rollout's
// workspace, as the sandbox's own uid, under rlimits. Its PID namespace dies with it, so whatever
// the command started (setsid daemons included) is gone when the exec returns.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { bwrapArgs, osDirArgs, passwdFiles } from './bwrap-args.js';
import { prlimitArgs } from './limits.js';
import { LocalDriver } from './local-driver.js';
import { SANDBOX_PATH, type LocalDriverHooks } from './local-sandbox.js';
import { WORKSPACE_MOUNT } from './paths.js';
import type { Workdir } from './workdir.js';
import type { SandboxSpec } from './types.js';

const run = promisify(execFile);

export const BWRAP = '/usr/bin/bwrap';

export class BwrapDriver extends LocalDriver {
  readonly name = 'bwrap' as const;
  private probe: Promise<boolean> | null = null;

  /** bwrap is installed and can create the namespaces (user namespaces may be disabled). */
  available(): Promise<boolean> {
    this.probe ??= run(BWRAP, ['--unshare-all', '--die-with-parent', ...osDirArgs(), '--', '/usr/bin/true'], { timeout: 5000 })
      .then(() => true)
      .catch(() => false);
    return this.probe;
  }

  protected hooks(w: Workdir, spec: SandboxSpec): Omit<LocalDriverHooks, 'onDestroy'> {
    const ids = passwdFiles(w.meta.uid ?? process.getuid?.() ?? 0);
    return {
      wrap: (argv, cwd, env) => ({
        argv: ['prlimit', ...prlimitArgs(spec.limits), BWRAP, ...bwrapArgs({ ws: w.ws, cwd, diskBytes: spec.limits.diskBytes, argv, readOnlyMounts: spec.readOnlyMounts ?? [] })],
        cwd: w.ws,
        env: { PATH: SANDBOX_PATH, HOME: WORKSPACE_MOUNT, LANG: 'C.UTF-8', TMPDIR: '/tmp', ...env },
        extraFds: [ids.passwd, ids.group],
      }),
      // Nothing to sweep: the PID namespace dies with bwrap (--die-with-parent covers a killed bwrap),
      // taking setsid'd daemons with it. Skipping it saves a process spawn per exec.
      afterKill: async () => {},
    };
  }
}
