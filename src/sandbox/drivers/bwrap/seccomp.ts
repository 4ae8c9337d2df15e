// The seccomp filter every bubblewrap sandbox runs under (`bwrap --seccomp FD`): a classic BPF
// program that answers EPERM to the system calls that reach into another process (ptrace,
// process_vm_readv/writev, pidfd_getfd, kcmp, ...) and to those Docker's default profile also keeps
// from an unprivileged container (kernel keyring, bpf, perf, userfaultfd, io_uring, mounts, module
// and clock changes, namespaces). Everything else is allowed: the sandbox's other walls (namespaces,
// a per-sandbox uid, rlimits, no capabilities) do the rest.
//
// The program is written here rather than by libseccomp so nothing has to be compiled at setup. It
// is per architecture: system call numbers differ between x86_64 and aarch64, and a call made
// through another ABI (i386 `int 0x80`, x32) is refused outright, since its numbers mean other calls.
// On any other architecture there is no filter and the bwrap driver refuses to run (see driver.ts).

/** seccomp_data offsets: `int nr; __u32 arch; ...` */
const NR_OFFSET = 0;
const ARCH_OFFSET = 4;

const BPF_LD_W_ABS = 0x20; // BPF_LD | BPF_W | BPF_ABS
const BPF_JEQ_K = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
const BPF_JGE_K = 0x35; // BPF_JMP | BPF_JGE | BPF_K
const BPF_RET_K = 0x06; // BPF_RET | BPF_K

const SECCOMP_RET_ALLOW = 0x7fff0000;
const SECCOMP_RET_ERRNO = 0x00050000;
const EPERM = 1;

/** x32 system calls are x86_64 numbers with this bit set. */
const X32_SYSCALL_BIT = 0x40000000;

interface ArchSpec {
  /** AUDIT_ARCH_* as seccomp reports it in seccomp_data.arch. */
  audit: number;
  /** Whether numbers at or above X32_SYSCALL_BIT must be refused (x86_64 only). */
  x32: boolean;
}

/** Keyed by Node's process.arch names. */
const ARCHES: Record<string, ArchSpec> = {
  x64: { audit: 0xc000003e, x32: true }, // EM_X86_64 | 64-bit | little-endian
  arm64: { audit: 0xc00000b7, x32: false }, // EM_AARCH64 | 64-bit | little-endian
};

/**
 * Denied system calls and their numbers: x86_64 from asm/unistd_64.h, aarch64 from
 * asm-generic/unistd.h (test/sandbox/drivers/bwrap/seccomp.test.ts checks both against the headers when installed).
 * A missing number means the call does not exist on that architecture.
 */
export const DENIED_SYSCALLS: Record<string, { x64?: number; arm64?: number }> = {
  // another process's memory or descriptors
  ptrace: { x64: 101, arm64: 117 },
  process_vm_readv: { x64: 310, arm64: 270 },
  process_vm_writev: { x64: 311, arm64: 271 },
  pidfd_getfd: { x64: 438, arm64: 438 },
  kcmp: { x64: 312, arm64: 272 },
  process_madvise: { x64: 440, arm64: 440 },
  process_mrelease: { x64: 448, arm64: 448 },
  // kernel facilities that are not namespaced, or are a large attack surface
  add_key: { x64: 248, arm64: 217 },
  request_key: { x64: 249, arm64: 218 },
  keyctl: { x64: 250, arm64: 219 },
  bpf: { x64: 321, arm64: 280 },
  perf_event_open: { x64: 298, arm64: 241 },
  userfaultfd: { x64: 323, arm64: 282 },
  io_uring_setup: { x64: 425, arm64: 425 },
  io_uring_enter: { x64: 426, arm64: 426 },
  io_uring_register: { x64: 427, arm64: 427 },
  lookup_dcookie: { x64: 212, arm64: 18 },
  open_by_handle_at: { x64: 304, arm64: 265 },
  name_to_handle_at: { x64: 303, arm64: 264 },
  fanotify_init: { x64: 300, arm64: 262 },
  // mounts and namespaces (bwrap already dropped the capabilities; this is a second wall)
  mount: { x64: 165, arm64: 40 },
  umount2: { x64: 166, arm64: 39 },
  pivot_root: { x64: 155, arm64: 41 },
  chroot: { x64: 161, arm64: 51 },
  open_tree: { x64: 428, arm64: 428 },
  move_mount: { x64: 429, arm64: 429 },
  fsopen: { x64: 430, arm64: 430 },
  fsconfig: { x64: 431, arm64: 431 },
  fsmount: { x64: 432, arm64: 432 },
  fspick: { x64: 433, arm64: 433 },
  mount_setattr: { x64: 442, arm64: 442 },
  unshare: { x64: 272, arm64: 97 },
  setns: { x64: 308, arm64: 268 },
  // the machine itself
  kexec_load: { x64: 246, arm64: 104 },
  kexec_file_load: { x64: 320, arm64: 294 },
  init_module: { x64: 175, arm64: 105 },
  finit_module: { x64: 313, arm64: 273 },
  delete_module: { x64: 176, arm64: 106 },
  reboot: { x64: 169, arm64: 142 },
  swapon: { x64: 167, arm64: 224 },
  swapoff: { x64: 168, arm64: 225 },
  acct: { x64: 163, arm64: 89 },
  quotactl: { x64: 179, arm64: 60 },
  quotactl_fd: { x64: 443, arm64: 443 },
  settimeofday: { x64: 164, arm64: 170 },
  clock_settime: { x64: 227, arm64: 112 },
  clock_adjtime: { x64: 305, arm64: 266 },
  syslog: { x64: 103, arm64: 116 },
  vhangup: { x64: 153, arm64: 58 },
  sethostname: { x64: 170, arm64: 161 },
  setdomainname: { x64: 171, arm64: 162 },
  iopl: { x64: 172 },
  ioperm: { x64: 173 },
  uselib: { x64: 134 },
  ustat: { x64: 136 },
  sysfs: { x64: 139 },
  _sysctl: { x64: 156 },
  nfsservctl: { x64: 180, arm64: 42 },
};

function insn(code: number, jt: number, jf: number, k: number): Buffer {
  const b = Buffer.alloc(8);
  b.writeUInt16LE(code, 0);
  b.writeUInt8(jt, 2);
  b.writeUInt8(jf, 3);
  b.writeUInt32LE(k >>> 0, 4);
  return b;
}

/** The architectures a filter exists for (Node's process.arch names). */
export function seccompArches(): string[] {
  return Object.keys(ARCHES);
}

/**
 * The filter as bwrap reads it from `--seccomp FD`: an array of `struct sock_filter` in host byte
 * order (both supported architectures are little-endian). null when there is none for `arch`.
 */
export function seccompFilter(arch: string = process.arch): Buffer | null {
  const spec = ARCHES[arch];
  if (!spec) return null;
  const key = arch as 'x64' | 'arm64';
  const numbers = [...new Set(Object.values(DENIED_SYSCALLS).flatMap((n) => (n[key] !== undefined ? [n[key]] : [])))].sort((a, b) => a - b);
  // Layout: check arch, load nr, [refuse x32], one jeq per denied number, allow, deny.
  const head = spec.x32 ? 4 : 3;
  const denyAt = head + numbers.length + 1;
  const toDeny = (at: number): number => denyAt - (at + 1);
  const prog: Buffer[] = [
    insn(BPF_LD_W_ABS, 0, 0, ARCH_OFFSET),
    insn(BPF_JEQ_K, 0, toDeny(1), spec.audit),
    insn(BPF_LD_W_ABS, 0, 0, NR_OFFSET),
  ];
  if (spec.x32) prog.push(insn(BPF_JGE_K, toDeny(3), 0, X32_SYSCALL_BIT));
  numbers.forEach((nr, i) => prog.push(insn(BPF_JEQ_K, toDeny(head + i), 0, nr)));
  prog.push(insn(BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW));
  prog.push(insn(BPF_RET_K, 0, 0, SECCOMP_RET_ERRNO | EPERM));
  if (toDeny(0) > 255) throw new Error('seccomp filter too long for 8-bit jumps');
  return Buffer.concat(prog);
}
