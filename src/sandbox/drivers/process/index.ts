// The process driver as the driver list knows it (src/sandbox/drivers/index.ts).
import { defineDriver } from '../../driver-module.js';
import { localOptions, localSettings } from '../../host/settings.js';

export const processDriver = defineDriver({
  name: 'process',
  // No isolation, development only; it costs less than bwrap (no holder).
  defaultCap: 1024,
  settings: localSettings,
  options: localOptions,
  shared: false,
  isolates: false,
  async create(opts) {
    const { ProcessDriver } = await import('./driver.js');
    return new ProcessDriver({
      sandboxesRoot: opts.sandboxesRoot,
      instanceId: opts.instanceId,
      ...(opts.localWarm !== undefined ? { warmPool: opts.localWarm } : {}),
      ...(opts.hiddenPaths ? { hiddenPaths: opts.hiddenPaths } : {}),
    });
  },
});
