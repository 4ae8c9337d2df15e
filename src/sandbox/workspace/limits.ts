// Default per-exec limits and their translation into rlimits. cgroups v2 has no usable controllers on
// the machines we target (v1 owns them), so limits are rlimits applied by util-linux `prlimit` just
// before the sandboxed program starts; RLIMIT_NPROC only bites because every sandbox runs as its own
// unprivileged uid (see uids.ts).
import type { SandboxLimits } from '../types.js';

/**
 * Files a sandbox may create on its tmpfs (workspace, /tmp and /dev/shm together). Each costs about
 * 1 KB of kernel memory whatever its size, so this bounds that memory to about 16 MiB per sandbox;
 * a coding task's checkout (a few thousand files with a virtualenv) fits many times over.
 */
export const DEFAULT_INODES = 16_384;

export const defaultLimits: SandboxLimits = {
  cpuSeconds: 30,
  memoryBytes: 1024 * 1024 * 1024,
  maxProcesses: 64,
  maxFileBytes: 64 * 1024 * 1024,
  wallTimeoutMs: 30_000,
  maxOutputBytes: 64 * 1024,
  diskBytes: 256 * 1024 * 1024,
  inodes: DEFAULT_INODES,
};

/** Processes a driver itself runs under the sandbox uid (bwrap: the sandbox's holder and its bwrap). */
const DRIVER_PROCESSES = 4;

const GiB = 1024 * 1024 * 1024;

/**
 * The rlimits of every process of a command. Memory is RLIMIT_DATA
 * (private writable memory: heap, anonymous mmap), which JIT runtimes live with: Node reserves about
 * 1 GiB of PROT_NONE address space at start and dies under a 512 MiB RLIMIT_AS. RLIMIT_AS stays as a
 * loose backstop (4x, at least 4 GiB) for what RLIMIT_DATA does not count, such as shared mappings.
 */
export function rlimits(limits: SandboxLimits): Record<'cpu' | 'data' | 'as' | 'nproc' | 'fsize' | 'core' | 'nofile', number> {
  return {
    cpu: Math.max(1, Math.ceil(limits.cpuSeconds)),
    data: limits.memoryBytes,
    as: Math.max(4 * limits.memoryBytes, 4 * GiB),
    nproc: limits.maxProcesses + DRIVER_PROCESSES,
    fsize: limits.maxFileBytes,
    core: 0,
    nofile: 1024,
  };
}

/** `prlimit` arguments that apply `limits` to the program that follows them. */
export function prlimitArgs(limits: SandboxLimits): string[] {
  return [...Object.entries(rlimits(limits)).map(([k, v]) => `--${k}=${v}`), '--'];
}

/** The same limits as the bwrap supervisor takes them: "cpu=N,data=N,...". */
export function rlimitSpec(limits: SandboxLimits): string {
  return Object.entries(rlimits(limits))
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
}

/**
 * A grader's fresh sandbox (SandboxManager.createEphemeral): twice a rollout's disk and inodes, so a
 * full copy of a rollout's workspace (however full it was left) fits with the same room again for
 * the tests' own files. Its other limits are a rollout's, and start afresh.
 */
export function gradingLimits(l: SandboxLimits): SandboxLimits {
  return { ...l, ...(l.diskBytes ? { diskBytes: 2 * l.diskBytes } : {}), inodes: 2 * (l.inodes ?? DEFAULT_INODES) };
}
