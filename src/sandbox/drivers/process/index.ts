// The process driver as the driver list knows it (src/sandbox/drivers/index.ts).
import { defineDriver } from '../../driver-module.js';
import { localOptions, localSettings, warmPoolOptions } from '../../host/settings.js';

const DEFAULT_CAP = 1024;

export const processDriver = defineDriver({
  name: 'process',
  // No isolation, development only; it costs less than bwrap (no holder).
  defaultCap: DEFAULT_CAP,
  settings: localSettings,
  options: localOptions,
  shared: false,
  isolates: false,
  async create(opts) {
    const { ProcessDriver } = await import('./driver.js');
    return new ProcessDriver({
      sandboxesRoot: opts.sandboxesRoot,
      instanceId: opts.instanceId,
      ...warmPoolOptions(opts, DEFAULT_CAP),
      ...(opts.hiddenPaths ? { hiddenPaths: opts.hiddenPaths } : {}),
    });
  },
});
