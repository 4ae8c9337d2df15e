// The bubblewrap command line that builds a rollout's sandbox around its holder (runner.ts;
// each command then enters it through the supervisor). Everything is unshared (no network: the sandbox gets
// its own empty network namespace), the host is visible only through read-only binds of the OS
// directories and a handful of /etc files (no /root, no /home, no data dir, no /etc/shadow), and the
// rest of the tree (/, /dev) is remounted read-only so the only writable places are the sandbox's
// own tmpfs: /workspace, /tmp and /dev/shm.
//
// Nothing of the host shows inside: the options travel on a descriptor (`--args`), so no process in
// the sandbox can read host paths in a command line, and the holder is PID 1 (`--as-pid-1`) of a PID
// namespace no command sees (each has its own), so no bwrap process with the options in its memory
// shares a command's view.
import { existsSync, lstatSync, readlinkSync, realpathSync } from 'node:fs';
import { WORKSPACE_MOUNT } from '../../workspace/paths.js';

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

/**
 * Inside the OS directories but never needed by a sandbox: global npm packages, which may hold this
 * very package with its examples, templates and hidden tests. Hidden behind an empty read-only tmpfs.
 */
export const ALWAYS_HIDDEN = ['/usr/lib/node_modules', '/usr/local/lib/node_modules'];

/** The fds bwrap reads its setup from (its --info-fd follows them). */
export const BWRAP_FDS = { args: 4, passwd: 5, group: 6, seccomp: 7 } as const;

interface OsView {
  args: string[];
  /** Real host paths that are visible inside (the bind sources). */
  sources: string[];
}

let osView: OsView | null = null;

/** Binds for the OS directories as they are on this host (on merged-/usr systems /bin etc. are symlinks). */
function osDirs(): OsView {
  if (osView) return osView;
  const args: string[] = [];
  const sources: string[] = [];
  for (const d of OS_DIRS) {
    if (!existsSync(d)) continue;
    const st = lstatSync(d);
    if (st.isSymbolicLink()) args.push('--symlink', readlinkSync(d), d);
    else if (st.isDirectory()) {
      args.push('--ro-bind', d, d);
      sources.push(d);
    }
  }
  for (const f of ETC_FILES) {
    args.push('--ro-bind-try', `/etc/${f}`, `/etc/${f}`);
    sources.push(`/etc/${f}`);
  }
  osView = { args, sources };
  return osView;
}

export function osDirArgs(): string[] {
  return osDirs().args;
}

const within = (p: string, dir: string): boolean => p === dir || p.startsWith(dir + '/');

/** Options hiding host directories: empty tmpfs mounts, and their remounts read-only (see bwrapArgs). */
export interface HideArgs {
  mounts: string[];
  seals: string[];
}

/**
 * Options that hide `paths` (host directories: the templates root, the data dir, this package) from
 * every sandbox: each one that lies inside a bound OS directory gets an empty tmpfs over it, read-only
 * once set up, wherever the package is installed. Paths outside the binds are not visible anyway.
 */
export function hideArgs(paths: readonly string[]): HideArgs {
  const { sources } = osDirs();
  const reals = new Set<string>();
  for (const p of [...ALWAYS_HIDDEN, ...paths]) {
    try {
      const real = realpathSync(p);
      if (sources.some((s) => within(real, s)) && lstatSync(real).isDirectory()) reals.add(real);
    } catch {
      // does not exist: nothing to hide
    }
  }
  // One inside another is hidden with it (a tmpfs over the outer one would bury the inner mount).
  const outermost = [...reals].filter((r) => ![...reals].some((o) => o !== r && within(r, o))).sort();
  return { mounts: outermost.flatMap((r) => ['--tmpfs', r]), seals: outermost.flatMap((r) => ['--remount-ro', r]) };
}

export function passwdFiles(uid: number): { passwd: string; group: string } {
  return {
    passwd: `root:x:0:0:root:/root:/bin/sh\nsandbox:x:${uid}:${uid}:sandbox:${WORKSPACE_MOUNT}:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n`,
    group: `root:x:0:\nsandbox:x:${uid}:\nnogroup:x:65534:\n`,
  };
}

export interface BwrapArgsInput {
  /** Host directories bound at /workspace, /tmp and /dev/shm. */
  ws: string;
  tmp: string;
  shm: string;
  cwd: string[];
  /** Output of hideArgs(). */
  hide: HideArgs;
  /** Host directories bound read-only at the same path (SandboxSpec.readOnlyMounts). */
  readOnlyMounts?: readonly string[];
}

/** bwrap's setup options, sent NUL-separated on fd BWRAP_FDS.args; the holder follows `--` on the real command line. */
export function bwrapArgs(i: BwrapArgsInput): string[] {
  return [
    '--unshare-all',
    // No nested user namespaces: they would hand the command a full capability set (inside its own
    // namespace), which is kernel attack surface a coding task never needs.
    '--unshare-user',
    '--disable-userns',
    '--die-with-parent',
    '--new-session',
    '--as-pid-1',
    '--hostname',
    'sandbox',
    ...osDirArgs(),
    ...i.hide.mounts,
    '--ro-bind-data',
    String(BWRAP_FDS.passwd),
    '/etc/passwd',
    '--ro-bind-data',
    String(BWRAP_FDS.group),
    '/etc/group',
    '--seccomp',
    String(BWRAP_FDS.seccomp),
    '--proc',
    '/proc',
    '--dev',
    '/dev',
    '--bind',
    i.shm,
    '/dev/shm',
    '--bind',
    i.tmp,
    '/tmp',
    '--bind',
    i.ws,
    WORKSPACE_MOUNT,
    // Read-only host mounts may lie inside a hidden directory (an MCP server in a global install):
    // bound before the hiding tmpfs is sealed read-only.
    ...(i.readOnlyMounts ?? []).flatMap((m) => ['--ro-bind', m, m]),
    ...i.hide.seals,
    '--remount-ro',
    '/dev',
    '--remount-ro',
    '/',
    '--chdir',
    [WORKSPACE_MOUNT, ...i.cwd].join('/'),
  ];
}

/** The --args payload: NUL-terminated options. */
export function argsPayload(args: readonly string[]): Buffer {
  return Buffer.from(args.map((a) => `${a}\0`).join(''), 'utf8');
}
