// Copying a workspace out of its sandbox (Sandbox.copyOut), for grading in a fresh one. What is in
// the workspace is the rollout's to shape, and a rollout that learns to make its copy fail turns its
// failures into discarded rollouts (the grader answers 5xx, the trainer drops it) instead of zeros.
// So the copy never fails for what it finds: FIFOs, sockets and devices are skipped, directories past
// a depth or a path length are not entered, and files past the copy's byte and entry budgets are
// left out; each is reported (workspace-relative names only, never a host path), and the grader says
// so in its explanation.
import { constants } from 'node:fs';
import { chmod, lstat, mkdir, open, opendir, readlink, symlink, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { at } from './host-fs.js';
import { DEFAULT_INODES } from './limits.js';
import type { CopyBounds, CopyReport, SandboxLimits } from '../types.js';

export type { CopyBounds, CopyReport };

const { O_RDONLY, O_DIRECTORY, O_NOFOLLOW, O_NONBLOCK } = constants;

const SKIPPED_LISTED = 50;
const MiB = 1024 * 1024;

export const UNBOUNDED: CopyBounds = { maxBytes: Infinity, maxEntries: Infinity, maxDepth: Infinity, maxPathBytes: Infinity };

/**
 * What a copy of a workspace made under `limits` may hold: all of it when its tmpfs enforced them (a
 * grader's fresh sandbox has twice the room: gradingLimits), a bound where nothing did (the process
 * driver without root).
 */
export function copyBoundsFor(limits: SandboxLimits): CopyBounds {
  return { maxBytes: limits.diskBytes ?? 256 * MiB, maxEntries: limits.inodes ?? DEFAULT_INODES, maxDepth: 64, maxPathBytes: 1024 };
}

export type EntryKind = 'dir' | 'file' | 'symlink' | 'other';

/** Decides, entry by entry, what a copy takes, and keeps the report. */
export class CopyBudget {
  readonly report: CopyReport = { files: 0, bytes: 0, skipped: [], skippedCount: 0 };
  private entries = 0;
  /** Directories left out: what is below them goes unmentioned (a tar lists it entry by entry). */
  private readonly skippedDirs = new Set<string>();

  constructor(readonly bounds: CopyBounds) {}

  skip(name: string, why: string): void {
    this.report.skippedCount++;
    const shown = name.length > 80 ? `${name.slice(0, 40)}...${name.slice(-30)}` : name;
    if (this.report.skipped.length < SKIPPED_LISTED) this.report.skipped.push(`${shown}: ${why}`);
  }

  /** True when the entry (components below the root) is copied; otherwise it is reported as skipped. */
  admit(parts: readonly string[], kind: EntryKind, size = 0, what = 'a special file'): boolean {
    const name = parts.join('/');
    for (let i = 1; i < parts.length; i++) if (this.skippedDirs.has(parts.slice(0, i).join('/'))) return false;
    const b = this.bounds;
    let why: string | null = null;
    if (kind === 'other') why = what;
    else if (parts.length > b.maxDepth) why = `nested deeper than ${b.maxDepth} directories`;
    else if (Buffer.byteLength(name) > b.maxPathBytes) why = `a path longer than ${b.maxPathBytes} bytes`;
    else if (this.entries >= b.maxEntries) why = `past the copy's ${b.maxEntries} entries`;
    else if (kind === 'file' && this.report.bytes + size > b.maxBytes) why = `${size} bytes, past the copy's ${Math.floor(b.maxBytes / MiB)} MiB`;
    if (why !== null) {
      if (kind === 'dir') this.skippedDirs.add(name);
      this.skip(name, why);
      return false;
    }
    this.entries++;
    if (kind === 'file') {
      this.report.files++;
      this.report.bytes += size;
    }
    return true;
  }
}

function special(mode: number): string {
  const t = mode & constants.S_IFMT;
  if (t === constants.S_IFIFO) return 'a FIFO';
  if (t === constants.S_IFSOCK) return 'a socket';
  if (t === constants.S_IFCHR || t === constants.S_IFBLK) return 'a device';
  return 'a special file';
}

/** Errors an entry itself causes (it vanished, changed kind meanwhile, is unreadable): skipped, not fatal. */
const ENTRY_ERRORS = new Set(['ENOENT', 'ELOOP', 'ENOTDIR', 'EISDIR', 'EACCES', 'EPERM', 'ENAMETOOLONG', 'ENXIO', 'EAGAIN']);

/**
 * Copies the directory `src` (a workspace on this host, hostile) into the existing directory `dest`
 * (ours) within `budget`. Every source directory is opened by descriptor, one component at a time,
 * never following a link; links are recreated as links, hard links become copies, set-id bits are
 * dropped. Failures of `dest` (our disk) are thrown; anything the source causes is skipped.
 */
export async function copyTree(src: string, dest: string, budget: CopyBudget): Promise<CopyReport> {
  const root = await open(src, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
  try {
    await copyDir(root, [], dest, budget);
  } finally {
    await root.close();
  }
  return budget.report;
}

async function copyDir(dir: FileHandle, parts: string[], dest: string, budget: CopyBudget): Promise<void> {
  const names: string[] = [];
  const listing = await opendir(`/proc/self/fd/${dir.fd}`);
  for await (const d of listing) names.push(d.name);
  for (const name of names.sort()) {
    const rel = [...parts, name];
    const target = join(dest, name);
    try {
      const st = await lstat(at(dir, name));
      if (st.isDirectory()) {
        if (!budget.admit(rel, 'dir')) continue;
        const sub = await open(at(dir, name), O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
        try {
          await mkdir(target, { mode: 0o700 });
          await copyDir(sub, rel, target, budget);
          await chmod(target, (st.mode & 0o777) | 0o700);
        } finally {
          await sub.close();
        }
      } else if (st.isSymbolicLink()) {
        if (budget.admit(rel, 'symlink')) await symlink(await readlink(at(dir, name)), target);
      } else if (st.isFile()) {
        await copyFile(dir, name, rel, target, budget);
      } else {
        budget.admit(rel, 'other', 0, special(st.mode));
      }
    } catch (e) {
      const code = (e as { code?: string }).code ?? '';
      if (!ENTRY_ERRORS.has(code) || (e as { path?: string }).path?.startsWith(dest)) throw e;
      budget.skip(rel.join('/'), code);
    }
  }
}

async function copyFile(dir: FileHandle, name: string, rel: string[], target: string, budget: CopyBudget): Promise<void> {
  const from = await open(at(dir, name), O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
  try {
    const st = await from.stat();
    if (!st.isFile()) {
      budget.admit(rel, 'other', 0, special(st.mode)); // swapped for something else since the lstat
      return;
    }
    if (!budget.admit(rel, 'file', st.size)) return;
    const to = await open(target, 'wx', 0o600);
    try {
      // No more than was admitted, even if the file grows meanwhile.
      let left = st.size;
      const buf = Buffer.allocUnsafe(Math.min(left, MiB) || 1);
      while (left > 0) {
        const { bytesRead } = await from.read(buf, 0, Math.min(buf.length, left), null);
        if (bytesRead === 0) break;
        await to.write(buf, 0, bytesRead);
        left -= bytesRead;
      }
      await to.chmod(st.mode & 0o777);
    } finally {
      await to.close();
    }
  } finally {
    await from.close();
  }
}

/** The explanation line for a copy that left things out (nothing when it did not). */
export function copyNote(r: CopyReport): string {
  if (r.skippedCount === 0) return '';
  const more = r.skippedCount > r.skipped.length ? `; and ${r.skippedCount - r.skipped.length} more` : '';
  return `the grading copy of the workspace left out ${r.skippedCount} entr${r.skippedCount === 1 ? 'y' : 'ies'}: ${r.skipped.slice(0, 5).join('; ')}${r.skipped.length > 5 ? '; ...' : ''}${more}`;
}
