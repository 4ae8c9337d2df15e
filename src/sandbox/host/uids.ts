// One unprivileged uid per sandbox. It is what makes RLIMIT_NPROC a per-sandbox limit (the kernel
// counts processes per uid and never limits root), keeps one rollout out of another's workspace even
// on the host, and lets us kill everything a sandbox started, setsid'd daemons included, with a single
// kill(-1) issued as that uid. Claims are files in a machine-wide directory so that several servers
// (and test workers) on one host never hand out the same uid.
import { spawn } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { mkdir, open, unlink } from 'node:fs/promises';
import { errors } from '../../errors.js';

export const UID_MIN = 200_000;
export const UID_MAX = 1_200_000;
const CLAIM_DIR = '/run/rft-endpoints/uids';

/** True when we can run sandboxes as other uids (the server runs as root). */
export function canSwitchUid(): boolean {
  return process.getuid?.() === 0;
}

/** Claims a free sandbox uid (gid is the same number). */
export async function claimUid(owner: string): Promise<number> {
  await mkdir(CLAIM_DIR, { recursive: true, mode: 0o700 });
  for (let attempt = 0; attempt < 50; attempt++) {
    const uid = randomInt(UID_MIN, UID_MAX);
    try {
      const fh = await open(`${CLAIM_DIR}/${uid}`, 'wx', 0o600);
      await fh.writeFile(`${process.pid} ${owner}\n`);
      await fh.close();
      return uid;
    } catch (e) {
      if ((e as { code?: string }).code !== 'EEXIST') throw e;
    }
  }
  throw errors.sandboxFailed('could not claim a free sandbox uid');
}

export async function releaseUid(uid: number): Promise<void> {
  await unlink(`${CLAIM_DIR}/${uid}`).catch(() => {});
}

export function isSandboxUid(uid: number): boolean {
  return Number.isInteger(uid) && uid >= UID_MIN && uid < UID_MAX && uid !== process.getuid?.();
}

/**
 * Kills every process running as `uid`. kill(-1) from a process of that uid reaches exactly the
 * processes of that uid, atomically, so a fork bomb cannot outrun it. Refuses any uid outside the
 * sandbox range: run as our own uid it would kill the server.
 */
export async function killAllOf(uid: number): Promise<void> {
  if (!isSandboxUid(uid) || !canSwitchUid()) return;
  await new Promise<void>((resolve) => {
    const child = spawn('/bin/sh', ['-c', 'kill -9 -1 2>/dev/null; exit 0'], {
      uid,
      gid: uid,
      cwd: '/',
      stdio: 'ignore',
      env: {},
    });
    child.on('error', () => resolve());
    child.on('close', () => resolve());
  });
}
