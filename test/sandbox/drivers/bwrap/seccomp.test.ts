// The bwrap seccomp filter: its BPF program evaluated here instruction by instruction for every
// architecture we ship one for, its system call numbers checked against the kernel headers when they
// are installed, and the filter in force inside a real bubblewrap sandbox.
import { existsSync, readFileSync } from 'node:fs';
import { expect, it } from 'vitest';
import { DENIED_SYSCALLS, seccompArches, seccompFilter } from '../../../../src/sandbox/drivers/bwrap/seccomp.js';
import { describeIf } from '../../../helpers/require.js';
import { driversPresent, driverWithSandbox, spec } from '../../helpers.js';

const ALLOW = 0x7fff0000;
const EPERM = 0x00050001;
const AUDIT = { x64: 0xc000003e, arm64: 0xc00000b7, i386: 0x40000003 };

/** Runs a classic BPF seccomp program on (arch, nr); returns its verdict. */
function evaluate(prog: Buffer, arch: number, nr: number): number {
  let acc = 0;
  for (let pc = 0; pc * 8 < prog.length; ) {
    const code = prog.readUInt16LE(pc * 8);
    const jt = prog.readUInt8(pc * 8 + 2);
    const jf = prog.readUInt8(pc * 8 + 3);
    const k = prog.readUInt32LE(pc * 8 + 4);
    if (code === 0x20) acc = k === 0 ? nr >>> 0 : k === 4 ? arch >>> 0 : NaN;
    else if (code === 0x15) pc += acc === k ? jt : jf;
    else if (code === 0x35) pc += acc >= k ? jt : jf;
    else if (code === 0x06) return k;
    else throw new Error(`unexpected BPF opcode ${code.toString(16)} at ${pc}`);
    pc++;
  }
  throw new Error('fell off the end of the program');
}

for (const arch of seccompArches() as ('x64' | 'arm64')[]) {
  it(`on ${arch}, refuses every listed call with EPERM and allows the others`, () => {
    const prog = seccompFilter(arch);
    expect(prog).not.toBeNull();
    const denied = new Set(Object.values(DENIED_SYSCALLS).flatMap((n) => (n[arch] !== undefined ? [n[arch]] : [])));
    expect(denied.size).toBeGreaterThan(40);
    for (let nr = 0; nr < 600; nr++) expect(evaluate(prog as Buffer, AUDIT[arch], nr), `syscall ${nr}`).toBe(denied.has(nr) ? EPERM : ALLOW);
  });

  it(`on ${arch}, refuses calls made through another ABI`, () => {
    const prog = seccompFilter(arch) as Buffer;
    const other = arch === 'x64' ? AUDIT.arm64 : AUDIT.x64;
    for (const nr of [0, 1, 59, 101]) {
      expect(evaluate(prog, other, nr)).toBe(EPERM);
      expect(evaluate(prog, AUDIT.i386, nr)).toBe(EPERM);
    }
    if (arch === 'x64') expect(evaluate(prog, AUDIT.x64, 0x40000000 + 1)).toBe(EPERM); // x32 write
  });
}

it('has no filter for an architecture it does not know (the bwrap driver is then unavailable)', () => {
  expect(seccompFilter('riscv64')).toBeNull();
});

const headers = { x64: '/usr/include/x86_64-linux-gnu/asm/unistd_64.h', arm64: '/usr/include/asm-generic/unistd.h' };
for (const [arch, file] of Object.entries(headers) as ['x64' | 'arm64', string][]) {
  it.skipIf(!existsSync(file))(`uses the ${arch} numbers of the kernel headers (${file})`, () => {
    const text = readFileSync(file, 'utf8');
    for (const [name, nrs] of Object.entries(DENIED_SYSCALLS)) {
      const m = new RegExp(`#define __NR(?:3264)?_${name}\\s+(\\d+)`).exec(text);
      expect(nrs[arch], name).toBe(m ? Number(m[1]) : undefined);
    }
  });
}

const present = await driversPresent();
describeIf(present.bwrap, 'seccomp in bwrap', 'bwrap sandbox driver not available')('the filter inside a bwrap sandbox', () => {
  const ctx = driverWithSandbox('bwrap', spec('trace_seccomp'));
  it('refuses ptrace, process_vm_readv/writev, pidfd_getfd, kcmp, keyctl, io_uring and unshare; ordinary calls work', async () => {
    const nr = process.arch === 'arm64' ? { ptrace: 117, vm_readv: 270, vm_writev: 271, kcmp: 272, getfd: 438, keyctl: 219, uring: 425, unshare: 97 } : { ptrace: 101, vm_readv: 310, vm_writev: 311, kcmp: 312, getfd: 438, keyctl: 250, uring: 425, unshare: 272 };
    const py = [
      'import ctypes, json, os',
      'libc = ctypes.CDLL(None, use_errno=True)',
      'def call(nr, *a):',
      '    r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(x) for x in a])',
      '    return os.strerror(ctypes.get_errno()) if r < 0 else "ok"',
      'p = os.getpid()',
      `print(json.dumps({`,
      `  "ptrace": call(${nr.ptrace}, 0, 0, 0, 0),`, // PTRACE_TRACEME
      `  "process_vm_readv": call(${nr.vm_readv}, p, 0, 0, 0, 0, 0),`,
      `  "process_vm_writev": call(${nr.vm_writev}, p, 0, 0, 0, 0, 0),`,
      `  "kcmp": call(${nr.kcmp}, p, p, 0, 0, 0),`,
      `  "pidfd_getfd": call(${nr.getfd}, 0, 0, 0),`,
      `  "keyctl": call(${nr.keyctl}, 0, 0, 0, 0, 0),`,
      `  "io_uring_setup": call(${nr.uring}, 1, 0),`,
      `  "unshare": call(${nr.unshare}, 0),`,
      '  "getpid": "ok" if os.getpid() > 0 else "no",',
      '}))',
    ].join('\n');
    const r = await ctx.sb.exec(['python3', '-c', py]);
    expect(r.exitCode, r.stderr).toBe(0);
    const got = JSON.parse(r.stdout) as Record<string, string>;
    const eperm = 'Operation not permitted';
    expect(got).toEqual({ ptrace: eperm, process_vm_readv: eperm, process_vm_writev: eperm, kcmp: eperm, pidfd_getfd: eperm, keyctl: eperm, io_uring_setup: eperm, unshare: eperm, getpid: 'ok' });
  });

  it('still runs threads, subprocesses and an interpreter (python, node)', async () => {
    const r = await ctx.sb.exec('python3 -c "import threading, subprocess; t = threading.Thread(target=print, args=(1,)); t.start(); t.join(); print(subprocess.run([\'echo\', \'2\'], capture_output=True, text=True).stdout.strip())" && node -e "console.log(3)"');
    expect(r.stdout).toBe('1\n2\n3\n');
  });
});
