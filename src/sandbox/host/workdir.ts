// A local sandbox's host side: `<sandboxesRoot>/<id>/` holding meta.json (who owns it, for reaping
// after a crash) and `fs/`, one tmpfs capped in size and inodes (when the server is root) with the
// workspace `fs/ws` and the scratch directories bwrap binds at /tmp and /dev/shm, `fs/tmp` and
// `fs/shm`: one cap covers everything a sandbox can write. The root is 0711 so the sandbox uid can
// reach its own workspace by path (bwrap binds it as that uid) without listing its neighbours.
import { randomUUID } from 'node:crypto';
import { chmod, chown, mkdir, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { errors } from '../../errors.js';
import { DEFAULT_INODES } from '../workspace/limits.js';
import { spawnOps, type HostOps } from './host-ops.js';
import { canSwitchUid, claimUid, releaseUid } from './uids.js';
import type { SandboxLimits, SandboxSpec } from '../types.js';

export interface WorkdirMeta {
  id: string;
  traceId: string;
  driver: string;
  instance: string;
  /** Sandbox uid, or null when the server cannot switch uids (not root). */
  uid: number | null;
  pid: number;
  createdAt: string;
}

export interface Workdir {
  meta: WorkdirMeta;
  dir: string;
  /** The workspace, seen as /workspace inside. */
  ws: string;
  /** Seen as /tmp and /dev/shm inside a bwrap sandbox; on the same tmpfs as the workspace. */
  tmp: string;
  shm: string;
  /** The caps of the sandbox's tmpfs, when there is one (the server runs as root). */
  fs?: { bytes: number; inodes: number };
}

/** The caps of a sandbox's tmpfs for these limits (none without a disk size). */
export function tmpfsCaps(limits: SandboxLimits): Workdir['fs'] {
  return limits.diskBytes ? { bytes: limits.diskBytes, inodes: limits.inodes ?? DEFAULT_INODES } : undefined;
}

/** Where a workdir's directories are. */
export function workdirLayout(dir: string): Pick<Workdir, 'dir' | 'ws' | 'tmp' | 'shm'> {
  const fs = join(dir, 'fs');
  return { dir, ws: join(fs, 'ws'), tmp: join(fs, 'tmp'), shm: join(fs, 'shm') };
}

export async function writeMeta(w: Workdir): Promise<void> {
  await writeFile(join(w.dir, 'meta.json'), JSON.stringify(w.meta), { mode: 0o600 });
}

export const INSTANCE_LABEL = 'rft-endpoints.instance';

/** Creates the sandboxes root and checks that sandbox uids can traverse every parent of it. */
export async function prepareRoot(root: string): Promise<void> {
  await mkdir(root, { recursive: true });
  await chmod(root, 0o711);
  if (!canSwitchUid()) return;
  for (let d = root; ; d = dirname(d)) {
    const st = await stat(d);
    if ((st.mode & 0o001) === 0) {
      // No path in the message: a tool call that creates the first sandbox would show it.
      throw errors.config('a parent of the sandboxes root ($TMPDIR/rft-endpoints) is not searchable by other users (needs o+x)');
    }
    if (d === dirname(d)) break;
  }
}

export async function createWorkdir(root: string, driver: string, spec: SandboxSpec, ops: HostOps = spawnOps): Promise<Workdir> {
  const id = `sb_${randomUUID().replace(/-/g, '').slice(0, 16)}`;
  const paths = workdirLayout(join(root, id));
  const instance = spec.labels[INSTANCE_LABEL] ?? 'default';
  const uid = canSwitchUid() ? await claimUid(`${instance} ${id}`) : null;
  const meta: WorkdirMeta = { id, traceId: spec.traceId, driver, instance, uid, pid: process.pid, createdAt: new Date().toISOString() };
  const fs = uid !== null ? tmpfsCaps(spec.limits) : undefined;
  try {
    await mkdir(paths.dir, { mode: 0o711 });
    await writeFile(join(paths.dir, 'meta.json'), JSON.stringify(meta), { mode: 0o600 });
    await mkdir(dirname(paths.ws), { mode: 0o711 });
    if (uid !== null && fs) await ops.mountTmpfs(dirname(paths.ws), fs, { uid, gid: uid });
    for (const d of [paths.ws, paths.tmp, paths.shm]) {
      await mkdir(d, { mode: 0o700 });
      if (uid !== null) await chown(d, uid, uid);
    }
  } catch (e) {
    await removeWorkdir({ meta, ...paths }, ops);
    throw errors.sandboxUnavailable(`could not create a workspace: ${(e as { code?: string }).code ?? 'failed'}`);
  }
  return { meta, ...paths, ...(fs ? { fs } : {}) };
}

/** Kills what runs as the sandbox's uid, unmounts and deletes its directory, releases the uid. */
export async function removeWorkdir(w: Workdir, ops: HostOps = spawnOps): Promise<void> {
  if (w.meta.uid !== null) await ops.killAllOf(w.meta.uid);
  await ops.unmountUnder(w.dir);
  await rm(w.dir, { recursive: true, force: true, maxRetries: 3 });
  if (w.meta.uid !== null) await releaseUid(w.meta.uid);
}

/** Removes every workdir under `root` that belongs to `instance` (or has no readable meta); returns how many. */
export async function reapWorkdirs(root: string, instance: string, keep: (id: string) => boolean, ops: HostOps = spawnOps): Promise<number> {
  let names: string[];
  try {
    names = await readdir(root);
  } catch {
    return 0;
  }
  let reaped = 0;
  for (const name of names) {
    if (!name.startsWith('sb_') || keep(name)) continue;
    const dir = join(root, name);
    let meta: WorkdirMeta | null = null;
    try {
      meta = JSON.parse(await readFile(join(dir, 'meta.json'), 'utf8')) as WorkdirMeta;
    } catch {
      meta = null; // a crash between mkdir and writing meta
    }
    if (meta && meta.instance !== instance) continue;
    const m = meta ?? { id: name, traceId: '', driver: '', instance, uid: null, pid: 0, createdAt: '' };
    await removeWorkdir({ meta: m, ...workdirLayout(dir) }, ops);
    reaped++;
  }
  return reaped;
}
