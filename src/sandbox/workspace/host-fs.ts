// File operations on a workspace that lives in a host directory (bwrap and process drivers), safe
// against anything the sandboxed code planted there. Each path component is opened relative to the
// previous directory's fd (`/proc/self/fd/N/<name>`) with O_NOFOLLOW, which is openat()-style
// resolution: a symlink or a swapped-in directory anywhere on the path fails instead of leading out.
import { constants } from 'node:fs';
import { open, opendir, mkdir, lstat, type FileHandle } from 'node:fs/promises';
import { errors, RftError } from '../../errors.js';
import { shownName, workspaceComponents } from './paths.js';
import type { FileEntry } from '../types.js';

const { O_RDONLY, O_WRONLY, O_CREAT, O_TRUNC, O_DIRECTORY, O_NOFOLLOW, O_NONBLOCK } = constants;
const DIR_FLAGS = O_RDONLY | O_DIRECTORY | O_NOFOLLOW;

export interface Owner {
  uid: number;
  gid: number;
}

type FsError = Error & { code?: string };

/**
 * errno codes of a workspace file operation that the rollout's own commands cause (they fill the
 * workspace, take permissions away, leave a FIFO or nest names too long): the model's (a 4xx it
 * reads). Anything else (EIO, EMFILE, ENOMEM, ...) is the server's, a 5xx the trainer retries.
 */
const WORKSPACE_STATE: Record<string, string> = {
  ENOSPC: 'no space left in the workspace',
  EDQUOT: 'no space left in the workspace',
  EFBIG: 'file too large',
  ENAMETOOLONG: 'file name too long',
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  EROFS: 'read-only file system',
  EMLINK: 'too many links',
  ENOTEMPTY: 'directory not empty',
  EEXIST: 'file exists',
  ETXTBSY: 'text file busy',
  ENXIO: 'not a regular file (a FIFO or a device)',
  EAGAIN: 'not a regular file (a FIFO or a device)',
};

export function mapError(e: unknown, path: string): Error {
  if (e instanceof RftError) return e;
  const code = (e as FsError).code;
  // ELOOP: a symlink where O_NOFOLLOW forbids one; ENOTDIR can also be a symlink to a file.
  if (code === 'ELOOP' || code === 'EXDEV') return errors.pathEscape(path);
  if (code === 'ENOENT') return errors.notFound(`file "${path}"`);
  if (code === 'ENOTDIR') return errors.badRequest(`"${path}": a parent is not a directory`, { path });
  if (code === 'EISDIR') return errors.badRequest(`"${path}" is a directory`, { path });
  if (code !== undefined && WORKSPACE_STATE[code]) return errors.fileRefused(path, WORKSPACE_STATE[code]);
  // The code, not Node's message: that one names the host path.
  return errors.sandboxFailed(`"${path}": ${code ?? 'failed'}`);
}

export const at = (dir: FileHandle, name: string): string => `/proc/self/fd/${dir.fd}/${name}`;

/** Opens the directory `parts` below `root` without following any symlink; creates missing ones if `owner`. */
export async function openDir(root: string, parts: string[], create: Owner | null): Promise<FileHandle> {
  let dir = await open(root, DIR_FLAGS);
  for (const name of parts) {
    try {
      let next: FileHandle;
      try {
        next = await open(at(dir, name), DIR_FLAGS);
      } catch (e) {
        const code = (e as FsError).code;
        if (code === 'ENOTDIR' || code === 'ELOOP') {
          const st = await lstat(at(dir, name)).catch(() => null);
          if (st?.isSymbolicLink()) throw errors.pathEscape(parts.join('/'));
        }
        if (!create || code !== 'ENOENT') throw e;
        await mkdir(at(dir, name), { mode: 0o755 }).catch((err: FsError) => {
          if (err.code !== 'EEXIST') throw err;
        });
        next = await open(at(dir, name), DIR_FLAGS);
        await next.chown(create.uid, create.gid);
      }
      await dir.close();
      dir = next;
    } catch (e) {
      await dir.close();
      throw e;
    }
  }
  return dir;
}

export class HostWorkspace {
  constructor(
    readonly root: string,
    private readonly owner: Owner | null,
  ) {}

  /** Opens the file `path` (its parent chain without following links) and runs `use` on it. */
  private async withFile<T>(path: string, flags: number, mkdirs: Owner | null, use: (fh: FileHandle) => Promise<T>): Promise<T> {
    const parts = workspaceComponents(path);
    const name = parts.pop();
    try {
      if (name === undefined) throw errors.badRequest(`"${path}" is a directory`, { path });
      const dir = await openDir(this.root, parts, mkdirs);
      try {
        // O_NONBLOCK so a planted FIFO cannot hang the server; regular files ignore it.
        const fh = await open(at(dir, name), flags | O_NOFOLLOW | O_NONBLOCK, 0o644);
        try {
          const st = await fh.stat();
          if (st.isDirectory()) throw errors.badRequest(`"${path}" is a directory`, { path });
          if (!st.isFile()) throw errors.badRequest(`"${path}" is not a regular file`, { path });
          return await use(fh);
        } finally {
          await fh.close();
        }
      } finally {
        await dir.close();
      }
    } catch (e) {
      throw mapError(e, path);
    }
  }

  readFile(path: string, opts: { maxBytes?: number } = {}): Promise<Buffer> {
    return this.withFile(path, O_RDONLY, null, async (fh) => {
      if (opts.maxBytes === undefined) return fh.readFile();
      const buf = Buffer.alloc(Math.max(0, Math.min(opts.maxBytes, (await fh.stat()).size)));
      let got = 0;
      while (got < buf.length) {
        const { bytesRead } = await fh.read(buf, got, buf.length - got, got);
        if (bytesRead === 0) break;
        got += bytesRead;
      }
      return buf.subarray(0, got);
    });
  }

  writeFile(path: string, data: string | Buffer): Promise<void> {
    const owner = this.owner ?? { uid: process.getuid?.() ?? 0, gid: process.getgid?.() ?? 0 };
    return this.withFile(path, O_WRONLY | O_CREAT | O_TRUNC, owner, async (fh) => {
      if (this.owner) await fh.chown(this.owner.uid, this.owner.gid);
      await fh.writeFile(data);
    });
  }

  async listFiles(path = '', opts: { maxDepth?: number; maxEntries?: number } = {}): Promise<FileEntry[]> {
    const parts = workspaceComponents(path);
    const maxDepth = opts.maxDepth ?? 8;
    const maxEntries = opts.maxEntries ?? 1000;
    const out: FileEntry[] = [];
    const walk = async (dir: FileHandle, prefix: string, depth: number, inEscaped: boolean): Promise<void> => {
      // Names as bytes: decoded, a name that is not UTF-8 would not lstat (and was silently left out).
      const names: Buffer[] = [];
      for await (const d of await opendir(`/proc/self/fd/${dir.fd}`, { encoding: 'buffer' as BufferEncoding })) names.push(d.name as unknown as Buffer);
      names.sort(Buffer.compare);
      for (const name of names) {
        if (out.length >= maxEntries) return;
        const shown = shownName(name);
        const rel = prefix ? `${prefix}/${shown.text}` : shown.text;
        const escaped = inEscaped || shown.escaped;
        const path = Buffer.concat([Buffer.from(`/proc/self/fd/${dir.fd}/`), name]);
        let st;
        try {
          st = await lstat(path);
        } catch {
          continue; // removed while we listed
        }
        const type = st.isFile() ? 'file' : st.isDirectory() ? 'dir' : st.isSymbolicLink() ? 'symlink' : 'other';
        out.push({ path: rel, type, size: st.size, ...(escaped ? { escaped: true as const } : {}) });
        if (type === 'dir' && depth < maxDepth) {
          let child: FileHandle;
          try {
            child = await open(path, DIR_FLAGS);
          } catch {
            continue; // swapped for a symlink meanwhile: not followed
          }
          try {
            await walk(child, rel, depth + 1, escaped);
          } finally {
            await child.close();
          }
        }
      }
    };
    try {
      const dir = await openDir(this.root, parts, null);
      try {
        await walk(dir, parts.join('/'), 1, false);
      } finally {
        await dir.close();
      }
    } catch (e) {
      throw mapError(e, path);
    }
    return out;
  }
}
