// A size- and inode-capped tmpfs per sandbox: the only way to bound a rollout's disk use without
// filesystem quotas. The inode cap matters as much as the size: empty files cost no pages but about
// 1 KB of unreclaimable kernel memory each (inode and dentry), which `df -h` does not show, and a
// tmpfs allows millions by default. Needs root (mount(2) in the host namespace); without it the
// workspace is a plain directory and only RLIMIT_FSIZE (per file) applies.
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** tmpfs options for a sandbox's workspace: capped in bytes and inodes, owned by its uid. */
export function tmpfsOptions(cap: { bytes: number; inodes: number }, owner: { uid: number; gid: number }): string {
  return `size=${cap.bytes},nr_inodes=${cap.inodes},mode=0700,uid=${owner.uid},gid=${owner.gid}`;
}

export async function mountTmpfs(dir: string, cap: { bytes: number; inodes: number }, owner: { uid: number; gid: number }): Promise<void> {
  await run('mount', ['-t', 'tmpfs', '-o', `${tmpfsOptions(cap, owner)},nosuid,nodev`, 'rft-sandbox', dir]);
}

/** Mount points at or below `prefix`, deepest first, from /proc/self/mountinfo. */
export async function mountsUnder(prefix: string): Promise<string[]> {
  const info = await readFile('/proc/self/mountinfo', 'utf8');
  const points = info
    .split('\n')
    .map((line) => line.split(' ')[4])
    .filter((p): p is string => p !== undefined && (p === prefix || p.startsWith(prefix + '/')))
    .map((p) => p.replace(/\\040/g, ' '));
  return points.sort((a, b) => b.length - a.length);
}

export async function unmountUnder(prefix: string): Promise<void> {
  for (const p of await mountsUnder(prefix)) {
    await run('umount', ['-l', p]).catch(() => {});
  }
}
