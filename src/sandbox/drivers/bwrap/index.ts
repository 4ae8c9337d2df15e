// The bwrap driver as the driver list knows it (src/sandbox/drivers/index.ts).
import { defineDriver } from '../../driver-module.js';
import { localOptions, localSettings, warmPoolOptions } from '../../host/settings.js';

const DEFAULT_CAP = 1024;

export const bwrap = defineDriver({
  name: 'bwrap',
  // Measured, 200 idle sandboxes that each ran a command (bench/idle-cost.ts, bench/README.md): 2
  // processes (bubblewrap's monitor and the holder), 262 KB of their PSS, 486 KB of kernel memory
  // (namespaces, mounts, stacks, page tables), 4 KB and 5 inodes of workspace tmpfs, one uid claim:
  // about 0.75 MB and 2 pids. 1,024 of them: about 0.8 GB and 2,048 processes (pid_max is 32,768 on
  // a default kernel), while a busy rollout's own use is bounded by its limits, not by this.
  defaultCap: DEFAULT_CAP,
  settings: localSettings,
  options: localOptions,
  shared: false,
  isolates: true,
  async create(opts) {
    const { BwrapDriver } = await import('./driver.js');
    const log = opts.log;
    return new BwrapDriver({
      sandboxesRoot: opts.sandboxesRoot,
      instanceId: opts.instanceId,
      ...warmPoolOptions(opts, DEFAULT_CAP),
      ...(opts.hiddenPaths ? { hiddenPaths: opts.hiddenPaths } : {}),
      ...(log ? { log, onUnavailable: (why: string) => log.warn({ why }, 'sandbox driver bwrap is not available') } : {}),
    });
  },
});
