// The privileged host operations behind a local sandbox's workdir: mounting its tmpfs, unmounting
// it, killing every process of its uid. The process driver runs `mount`, `umount` and a shell as
// the uid; the bwrap driver asks its supervisor, so the server never forks (see supervisor/).
import { mountsUnder, mountTmpfs, unmountUnder } from './mount.js';
import { killAllOf } from './uids.js';

export interface HostOps {
  mountTmpfs(dir: string, cap: { bytes: number; inodes: number }, owner: { uid: number; gid: number }): Promise<void>;
  /** Detaches every mount at or below `prefix`, deepest first. */
  unmountUnder(prefix: string): Promise<void>;
  /** Kills every process of a sandbox uid at once (nothing for any other uid). */
  killAllOf(uid: number): Promise<void>;
}

export const spawnOps: HostOps = { mountTmpfs, unmountUnder, killAllOf };

/** HostOps from primitives: `unmountUnder` walks the mount table and detaches one by one. */
export function hostOpsFrom(p: { mountTmpfs: HostOps['mountTmpfs']; unmount(target: string): Promise<void>; killAllOf: HostOps['killAllOf'] }): HostOps {
  return {
    mountTmpfs: p.mountTmpfs,
    killAllOf: p.killAllOf,
    unmountUnder: async (prefix) => {
      for (const m of await mountsUnder(prefix)) await p.unmount(m).catch(() => {});
    },
  };
}
