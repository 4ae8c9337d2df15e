// Workspaces in and out of a Docker sandbox as tar streams (the Engine API's archive endpoints), so
// the engine may be on another host: no directory is shared with the server.
// - packWorkspace: the template folder (minus its hidden folder) and the inline files as one tar,
//   every entry owned by the sandbox user; sent before any command runs, so nothing in the container
//   can race it.
// - extractArchive: what a container sends back is the rollout's to shape (names, links, special
//   files, sizes), so it is unpacked like hostile input: names with `..` or a leading `/` are refused,
//   every path component is opened without following links (host-fs.ts openDir), symlinks are
//   recreated as links and never followed, hard links become copies, devices and FIFOs are skipped,
//   set-id bits are dropped.
import { createReadStream } from 'node:fs';
import { constants } from 'node:fs';
import { lstat, open, readdir, readlink, symlink, type FileHandle } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { Readable } from 'node:stream';
import { extract, pack, type Header, type Pack } from 'tar-stream';
import { errors } from '../../../errors.js';
import { CopyBudget, UNBOUNDED, type CopyBounds, type CopyReport } from '../../workspace/copy-out.js';
import { at, openDir, type Owner } from '../../workspace/host-fs.js';
import { workspaceComponents } from '../../workspace/paths.js';
import type { SandboxSpec } from '../../types.js';

const { O_WRONLY, O_CREAT, O_TRUNC, O_NOFOLLOW, O_NONBLOCK, O_RDONLY } = constants;

function insideOrEqual(child: string, parent: string): boolean {
  const r = relative(parent, child);
  return r === '' || (!r.startsWith('..') && !r.startsWith('/'));
}

function addEntry(p: Pack, header: Partial<Header> & { name: string }, body?: Readable | Buffer): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (body === undefined || Buffer.isBuffer(body)) {
      p.entry(header, body ?? Buffer.alloc(0), (e) => (e ? reject(e) : resolve()));
      return;
    }
    const sink = p.entry(header, (e) => (e ? reject(e) : resolve()));
    body.once('error', (e) => {
      sink.destroy(e);
      reject(e);
    });
    body.pipe(sink as unknown as NodeJS.WritableStream);
  });
}

export interface PackedWorkspace {
  /** The tar stream (paths relative to the workspace root), every entry owned by `owner`. */
  stream(owner: Owner): Readable;
}

/**
 * Lists and checks the starting workspace; null when there is nothing to put in it. Inline files
 * may not pass through a link or a file of the template (RFT_ERR_PATH_ESCAPE), as with the host
 * drivers. Throws before anything is created.
 */
export async function packWorkspace(src: Pick<SandboxSpec, 'templateDir' | 'files' | 'hiddenDir'>): Promise<PackedWorkspace | null> {
  if (src.templateDir === undefined && (src.files === undefined || Object.keys(src.files).length === 0)) return null;
  const kinds = new Map<string, 'dir' | 'file' | 'symlink'>();
  const entries: { rel: string; abs: string; kind: 'dir' | 'file' | 'symlink'; mode: number; size: number; mtime: Date }[] = [];
  if (src.templateDir !== undefined) {
    const hidden = src.hiddenDir;
    const walk = async (dir: string): Promise<void> => {
      for (const name of (await readdir(dir)).sort()) {
        const abs = join(dir, name);
        if (hidden !== undefined && insideOrEqual(abs, hidden)) continue;
        const st = await lstat(abs);
        const kind = st.isDirectory() ? 'dir' : st.isFile() ? 'file' : st.isSymbolicLink() ? 'symlink' : null;
        if (kind === null) continue; // a socket or FIFO in a template is not workspace content
        const rel = relative(src.templateDir as string, abs);
        kinds.set(rel, kind);
        entries.push({ rel, abs, kind, mode: st.mode & 0o7777, size: st.size, mtime: st.mtime });
        if (kind === 'dir') await walk(abs);
      }
    };
    await walk(src.templateDir);
  }
  const inline: [string, Buffer][] = [];
  for (const [path, content] of Object.entries(src.files ?? {})) {
    const parts = workspaceComponents(path);
    if (parts.length === 0) throw errors.badRequest(`inline file "${path}" names the workspace itself`, { path });
    for (let i = 1; i <= parts.length; i++) {
      const rel = parts.slice(0, i).join('/');
      const kind = kinds.get(rel);
      if (kind === 'symlink') throw errors.pathEscape(path);
      if (i < parts.length && kind === 'file') throw errors.badRequest(`"${path}": a parent is not a directory`, { path });
      if (i === parts.length && kind === 'dir') throw errors.badRequest(`"${path}" is a directory`, { path });
      if (i < parts.length && kind === undefined) {
        kinds.set(rel, 'dir');
        inline.push([rel, Buffer.alloc(0)]);
      }
    }
    kinds.set(parts.join('/'), 'file');
    inline.push([parts.join('/'), Buffer.from(content)]);
  }
  return { stream: (owner) => tarOf(entries, inline, kinds, owner) };
}

function tarOf(
  entries: { rel: string; abs: string; kind: 'dir' | 'file' | 'symlink'; mode: number; size: number; mtime: Date }[],
  inline: [string, Buffer][],
  kinds: Map<string, 'dir' | 'file' | 'symlink'>,
  owner: Owner,
): Readable {
  const p = pack();
  // PAX records carry ids past the ustar header's 6 octal digits (sandbox uids are above 262143).
  const ids = { uid: owner.uid, gid: owner.gid, pax: { uid: String(owner.uid), gid: String(owner.gid) } };
  void (async () => {
    for (const e of entries) {
      if (e.kind === 'dir') await addEntry(p, { name: `${e.rel}/`, type: 'directory', mode: e.mode, mtime: e.mtime, ...ids });
      else if (e.kind === 'symlink') await addEntry(p, { name: e.rel, type: 'symlink', linkname: await readlink(e.abs), mode: 0o777, mtime: e.mtime, ...ids });
      else await addEntry(p, { name: e.rel, type: 'file', size: e.size, mode: e.mode, mtime: e.mtime, ...ids }, createReadStream(e.abs));
    }
    const now = new Date();
    for (const [rel, content] of inline) {
      const dir = kinds.get(rel) === 'dir';
      await addEntry(p, dir ? { name: `${rel}/`, type: 'directory', mode: 0o755, mtime: now, ...ids } : { name: rel, type: 'file', size: content.length, mode: 0o644, mtime: now, ...ids }, dir ? undefined : content);
    }
    p.finalize();
  })().catch((e: unknown) => p.destroy(e as Error));
  return Readable.from(p as AsyncIterable<Buffer>);
}

/** What an extraction copied and left out (see copy-out.ts). */
export type ExtractReport = CopyReport;

/** Errors an entry's name or kind causes (a link where a directory was, a name too long ...). */
const SHAPE_ERRORS = new Set(['ELOOP', 'EEXIST', 'ENOTDIR', 'EISDIR', 'ENAMETOOLONG', 'ENOTEMPTY']);

/** How the copy report names what it leaves out (as copy-out.ts does for a host directory). */
const SPECIAL: Record<string, string> = { fifo: 'a FIFO', 'character-device': 'a device', 'block-device': 'a device' };

/** Splits an archive name into workspace-relative components, or null when it would leave the root. */
function components(name: string): string[] | null {
  if (name.startsWith('/') || name.includes('\0')) return null;
  const parts = name.split('/').filter((p) => p !== '' && p !== '.');
  return parts.some((p) => p === '..') ? null : parts;
}

/**
 * The directory an entry goes in, opened without following links. A tar lists a directory's entries
 * together, so the last one opened is kept for the next entry (a directory this extraction created,
 * that nothing else writes to): one open per directory instead of one per component per file.
 */
class Parents {
  private last: { key: string; dir: FileHandle } | null = null;

  constructor(
    private readonly root: string,
    private readonly me: Owner,
  ) {}

  async with<T>(parts: string[], fn: (dir: FileHandle, name: string) => Promise<T>): Promise<T> {
    const key = parts.slice(0, -1).join('/');
    if (this.last?.key !== key) {
      await this.close();
      this.last = { key, dir: await openDir(this.root, parts.slice(0, -1), this.me) };
    }
    return fn(this.last.dir, parts[parts.length - 1] as string);
  }

  async close(): Promise<void> {
    const last = this.last;
    this.last = null;
    await last?.dir.close();
  }
}

/**
 * Unpacks `src` into the existing directory `root` (see the header for what is refused). Never
 * follows a link it or the archive planted; resolves with what was copied and what was skipped.
 */
export async function extractArchive(src: Readable, root: string, bounds: CopyBounds = UNBOUNDED): Promise<ExtractReport> {
  const me: Owner = { uid: process.getuid?.() ?? 0, gid: process.getgid?.() ?? 0 };
  const budget = new CopyBudget(bounds);
  const parents = new Parents(root, me);
  const skip = (name: string, why: string): void => budget.skip(name, why);
  /** Each regular file extracted, and its size, for hard links to it. */
  const extracted = new Map<string, number>();
  const ex = extract();
  src.once('error', (e) => ex.destroy(e));
  src.pipe(ex as unknown as NodeJS.WritableStream);
  try {
  for await (const entry of ex) {
    const h = entry.header;
    const parts = components(h.name);
    try {
      if (parts === null) {
        skip(h.name, 'outside the workspace');
        continue;
      }
      if (parts.length === 0) continue; // the workspace root itself
      const name = parts.join('/');
      const kind = h.type === 'directory' ? 'dir' : h.type === 'symlink' ? 'symlink' : h.type === 'file' || h.type === 'contiguous-file' || h.type === 'link' ? 'file' : 'other';
      const linked = h.type === 'link' ? components(h.linkname ?? '') : null;
      if (h.type === 'link' && (linked === null || !extracted.has(linked.join('/')))) throw errors.pathEscape(name);
      // A hard link becomes a copy: it costs what its target does.
      const size = linked ? (extracted.get(linked.join('/')) ?? 0) : (h.size ?? 0);
      if (!budget.admit(parts, kind, size, SPECIAL[h.type ?? ''] ?? 'a special file')) continue;
      if (h.type === 'directory') {
        const dir = await openDir(root, parts, me);
        await dir.chmod(((h.mode ?? 0o755) & 0o777) | 0o700).finally(() => dir.close());
      } else if (h.type === 'file' || h.type === 'contiguous-file' || h.type === 'link') {
        await parents.with(parts, async (dir, base) => {
          const fh = await open(at(dir, base), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_NONBLOCK, 0o600);
          try {
            if (!(await fh.stat()).isFile()) throw errors.pathEscape(name);
            if (linked) {
              const from = await openDir(root, linked.slice(0, -1), me).then((d) =>
                open(at(d, linked[linked.length - 1] as string), O_RDONLY | O_NOFOLLOW | O_NONBLOCK).finally(() => d.close()),
              );
              try {
                for await (const chunk of from.createReadStream({ autoClose: false })) await fh.write(chunk as Buffer);
              } finally {
                await from.close();
              }
            } else {
              // Not stream.pipeline: it ends a streamx entry early, and tar-stream then waits forever.
              for await (const chunk of entry) await fh.write(chunk as Buffer);
            }
            await fh.chmod((h.mode ?? 0o644) & 0o777);
            if (h.mtime) await fh.utimes(h.mtime, h.mtime);
          } finally {
            await fh.close();
          }
        });
        extracted.set(name, size);
      } else if (h.type === 'symlink') {
        await parents.with(parts, (dir, base) => symlink(h.linkname ?? '', at(dir, base)));
      }
    } catch (e) {
      // What the archive's own shape causes is skipped and reported; a failure of the server's disk is not.
      const code = (e as { code?: string }).code ?? '';
      if (!code.startsWith('RFT_ERR_') && !SHAPE_ERRORS.has(code)) throw e;
      skip(h.name, code);
    } finally {
      entry.resume(); // whatever was not read is drained, so the next entry comes
    }
  }
  } finally {
    await parents.close();
  }
  return budget.report;
}
