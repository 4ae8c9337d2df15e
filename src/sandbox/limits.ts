// Default per-exec limits and their translation into rlimits. cgroups v2 has no usable controllers on
// the machines we target (v1 owns them), so limits are rlimits applied by util-linux `prlimit` just
// before the sandboxed program starts; RLIMIT_NPROC only bites because every sandbox runs as its own
// unprivileged uid (see uids.ts).
import type { SandboxLimits } from './types.js';

export const defaultLimits: SandboxLimits = {
  cpuSeconds: 30,
  // Address space, not RSS: Node needs about 1 GiB of reservations to start, Python far less.
  memoryBytes: 1024 * 1024 * 1024,
  maxProcesses: 64,
  maxFileBytes: 64 * 1024 * 1024,
  wallTimeoutMs: 30_000,
  maxOutputBytes: 64 * 1024,
  diskBytes: 256 * 1024 * 1024,
};

/** Processes a driver itself needs under the sandbox uid (bwrap's outer process and its pid-1 reaper). */
const DRIVER_PROCESSES = 4;

/** `prlimit` arguments that apply `limits` to the program that follows them. */
export function prlimitArgs(limits: SandboxLimits): string[] {
  return [
    `--cpu=${Math.max(1, Math.ceil(limits.cpuSeconds))}`,
    `--as=${limits.memoryBytes}`,
    `--nproc=${limits.maxProcesses + DRIVER_PROCESSES}`,
    `--fsize=${limits.maxFileBytes}`,
    '--core=0',
    '--nofile=1024',
    '--',
  ];
}
