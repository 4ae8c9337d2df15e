// The `process` driver: a working directory per rollout and rlimits, no isolation at all. Commands
// see the whole host filesystem and network. It exists for development and for machines without
// bubblewrap or Docker, and is refused unless the server listens on loopback only.
import { realpathSync } from 'node:fs';
import { join, sep } from 'node:path';
import { isLoopback } from '../config.js';
import { errors } from '../errors.js';
import { prlimitArgs } from './limits.js';
import { LocalDriver } from './local-driver.js';
import { SANDBOX_PATH, type LocalDriverHooks } from './local-sandbox.js';
import type { Workdir } from './workdir.js';
import type { SandboxSpec } from './types.js';

/** Throws unless `host` is a loopback address: the process driver must never serve remote callers. */
export function assertProcessDriverAllowed(host: string): void {
  if (!isLoopback(host)) throw errors.processDriverNotAllowed(host);
}

export class ProcessDriver extends LocalDriver {
  readonly name = 'process' as const;

  async available(): Promise<boolean> {
    return true;
  }

  protected hooks(w: Workdir, spec: SandboxSpec): Omit<LocalDriverHooks, 'onDestroy'> {
    return {
      wrap: (argv, cwd, env) => {
        // No mount namespace here, so a cwd through a planted symlink must be refused on the host.
        const real = realpathSync(join(w.ws, ...cwd));
        if (real !== w.ws && !real.startsWith(w.ws + sep)) throw errors.pathEscape(cwd.join('/'));
        return {
          argv: ['prlimit', ...prlimitArgs(spec.limits), ...argv],
          cwd: real,
          env: { PATH: SANDBOX_PATH, HOME: w.ws, LANG: 'C.UTF-8', ...env },
        };
      },
    };
  }
}
