// What the sandbox manager reports, turned into metrics and integrity flags.
import type { Metrics } from '../metrics/metrics.js';
import type { SandboxObserver } from '../sandbox/types.js';
import { deniedSyscall, type IntegrityFlags } from './flags.js';

const COMMAND_SHOWN = 200;

export function sandboxObserver(metrics: Metrics | undefined, integrity: IntegrityFlags): SandboxObserver {
  return {
    ...(metrics
      ? {
          queueWait: (outcome, seconds) => metrics.sandboxQueued(outcome, seconds),
          created: (driver, seconds) => metrics.sandboxCreated(driver, seconds),
        }
      : {}),
    exec: (traceId, command, result) => {
      if (!deniedSyscall(result)) return;
      const text = (Array.isArray(command) ? command.join(' ') : command).slice(0, COMMAND_SHOWN);
      void integrity.record(traceId, 'denied_syscall', `killed by ${result.signal}: ${text}`);
    },
  };
}
