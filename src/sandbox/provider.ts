// Builds the sandbox manager the config asks for (or none). Imported lazily so a server with
// RFT_SANDBOX=none never touches the drivers.
import type { Logger } from 'pino';
import type { AppConfig } from '../config.js';
import type { SandboxProvider } from '../ledger/sandbox-provider.js';
import type { SandboxExtras } from './from-config.js';

export async function createSandboxProvider(config: AppConfig, log: Logger, extra: SandboxExtras = {}): Promise<SandboxProvider | undefined> {
  if (config.sandbox.driver === 'none') return undefined;
  const { createManagerFromConfig } = await import('./from-config.js');
  return createManagerFromConfig(config, log, extra);
}
