// The bubblewrap command line for one exec. Everything is unshared (no network: the sandbox gets
// its own empty network namespace), the host is visible only through read-only binds of the OS
// directories and a handful of /etc files (no /root, no /home, no data dir, no /etc/shadow), and the
// rest of the tree (/, /dev) is remounted read-only so the only writable places are the size-capped
// /workspace, /tmp and /dev/shm.
import { existsSync, lstatSync, readlinkSync } from 'node:fs';
import { WORKSPACE_MOUNT } from './paths.js';

const OS_DIRS = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32'];
const ETC_FILES = [
  'alternatives',
  'ld.so.cache',
  'ld.so.conf',
  'ld.so.conf.d',
  'localtime',
  'nsswitch.conf',
  'os-release',
  'debian_version',
  'mime.types',
  'ssl/certs',
  'python3',
  'gitconfig',
];

let osBinds: string[] | null = null;

/** Binds for the OS directories as they are on this host (on merged-/usr systems /bin etc. are symlinks). */
export function osDirArgs(): string[] {
  if (osBinds) return osBinds;
  const out: string[] = [];
  for (const d of OS_DIRS) {
    if (!existsSync(d)) continue;
    const st = lstatSync(d);
    if (st.isSymbolicLink()) out.push('--symlink', readlinkSync(d), d);
    else if (st.isDirectory()) out.push('--ro-bind', d, d);
  }
  for (const f of ETC_FILES) out.push('--ro-bind-try', `/etc/${f}`, `/etc/${f}`);
  osBinds = out;
  return out;
}

export function passwdFiles(uid: number): { passwd: string; group: string } {
  return {
    passwd: `root:x:0:0:root:/root:/bin/sh\nsandbox:x:${uid}:${uid}:sandbox:${WORKSPACE_MOUNT}:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n`,
    group: `root:x:0:\nsandbox:x:${uid}:\nnogroup:x:65534:\n`,
  };
}

export interface BwrapArgsInput {
  ws: string;
  cwd: string[];
  diskBytes: number | undefined;
  argv: string[];
  /** Host directories bound read-only at the same path (SandboxSpec.readOnlyMounts). */
  readOnlyMounts?: string[];
}

/** fds 3 and 4 carry /etc/passwd and /etc/group (see passwdFiles). */
export function bwrapArgs(i: BwrapArgsInput): string[] {
  const size = (n: number | undefined): string[] => (n ? ['--size', String(n)] : []);
  return [
    '--unshare-all',
    // No nested user namespaces: they would hand the command a full capability set (inside its own
    // namespace), which is kernel attack surface a coding task never needs.
    '--unshare-user',
    '--disable-userns',
    '--die-with-parent',
    '--new-session',
    '--hostname',
    'sandbox',
    ...osDirArgs(),
    '--ro-bind-data',
    '3',
    '/etc/passwd',
    '--ro-bind-data',
    '4',
    '/etc/group',
    '--proc',
    '/proc',
    '--dev',
    '/dev',
    ...size(i.diskBytes),
    '--tmpfs',
    '/dev/shm',
    ...size(i.diskBytes),
    '--tmpfs',
    '/tmp',
    '--bind',
    i.ws,
    WORKSPACE_MOUNT,
    ...(i.readOnlyMounts ?? []).flatMap((m) => ['--ro-bind', m, m]),
    '--remount-ro',
    '/dev',
    '--remount-ro',
    '/',
    '--chdir',
    [WORKSPACE_MOUNT, ...i.cwd].join('/'),
    '--',
    ...i.argv,
  ];
}
