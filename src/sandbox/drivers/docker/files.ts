// readFile, writeFile and listFiles of a Docker sandbox: one exec of a short POSIX sh script inside
// the container, as the sandbox user, with the path as separate arguments (never spliced into the
// script). The server first refuses what can never be in the workspace (absolute paths other than
// /workspace/..., `..`, NUL: paths.ts); the script then refuses any symlink on the way and anything
// that is not a regular file. Because it runs with exactly the rights of the sandbox's own
// commands, inside the container, a race that swaps a directory for a link mid-walk can only reach
// what those commands can reach anyway; nothing of the engine host or the server is in view.
// Needs sh, cat, head, mkdir and GNU find in the image (the shipped image has them).
import { errors } from '../../../errors.js';
import { shownName } from '../../workspace/paths.js';
import type { FileEntry } from '../../types.js';

/** Walks "$@" from the workspace root refusing links; leaves the path in $p. Exit codes: see CODES. */
const WALK = `p=.; n=$#
for c in "$@"; do
  p="$p/$c"; n=$((n-1))
  if [ -L "$p" ]; then exit 40; fi
  if [ $n -gt 0 ] || [ "$MODE" = dir ]; then
    if [ ! -e "$p" ]; then
      if [ "$MODE" = write ]; then mkdir -- "$p" || exit 46; else exit 42; fi
    elif [ ! -d "$p" ]; then exit 44; fi
  fi
done
`;

export const FILE_SCRIPTS = {
  read: `MODE=read; m=$1; shift
${WALK}if [ ! -e "$p" ]; then exit 42; fi
if [ -d "$p" ]; then exit 41; fi
if [ ! -f "$p" ]; then exit 43; fi
if [ "$m" = all ]; then exec cat -- "$p"; else exec head -c "$m" -- "$p"; fi`,
  write: `MODE=write
${WALK}if [ -d "$p" ]; then exit 41; fi
if [ -e "$p" ] && [ ! -f "$p" ]; then exit 43; fi
exec cat > "$p"`,
  list: `MODE=dir; d=$1; shift
${WALK}exec find "$p" -mindepth 1 -maxdepth "$d" -printf '%y %s %P\\0'`,
} as const;

/** What a helper's exit code means, as the host drivers' errors (host-fs.ts) say it. */
/** coreutils' wording of the errno codes host-fs.ts treats as the workspace's state (the model's). */
const WORKSPACE_STATE =
  /No space left on device|Disk quota exceeded|File too large|File name too long|Permission denied|Operation not permitted|Read-only file system|Too many links|Directory not empty|File exists|Text file busy|No such device or address/i;

export function fileError(code: number | null, path: string, stderr: string): Error | null {
  switch (code) {
    case 0:
      return null;
    case 40:
      return errors.pathEscape(path);
    case 41:
      return errors.badRequest(`"${path}" is a directory`, { path });
    case 42:
      return errors.notFound(`file "${path}"`);
    case 43:
      return errors.badRequest(`"${path}" is not a regular file`, { path });
    case 44:
      return errors.badRequest(`"${path}": a parent is not a directory`, { path });
    default: {
      const why = stderr.trim().split('\n').pop()?.replace(/^(sh|cat|head|mkdir|find): (\d+: )?/, '') || `exit ${code ?? 'by signal'}`;
      // The workspace's own state (filled, permissions taken away by the rollout): the model's.
      if (code === 153) return errors.fileRefused(path, 'file too large');
      if (WORKSPACE_STATE.test(why)) return errors.fileRefused(path, why.replace(/^.*: /, '').toLowerCase());
      return errors.sandboxFailed(`"${path}": ${why}`);
    }
  }
}

const TYPES: Record<string, FileEntry['type']> = { f: 'file', d: 'dir', l: 'symlink' };

function splitBytes(b: Buffer, sep: number): Buffer[] {
  const parts: Buffer[] = [];
  let at = 0;
  for (let i = b.indexOf(sep); i !== -1; i = b.indexOf(sep, at)) {
    parts.push(b.subarray(at, i));
    at = i + 1;
  }
  parts.push(b.subarray(at));
  return parts;
}

/** Parses `find -printf '%y %s %P\0'` into entries below `prefix`, in the host drivers' order, at most `max`. */
export function parseListing(out: Buffer, prefix: string[], max: number): FileEntry[] {
  const entries: { parts: string[]; entry: FileEntry }[] = [];
  // Records split as bytes, names decoded per component: a name that is not UTF-8 is shown escaped
  // (paths.ts shownName), as the host drivers show it, not garbled into U+FFFD.
  for (let at = 0, end = out.indexOf(0); at < out.length; at = end + 1, end = out.indexOf(0, at)) {
    const rec = out.subarray(at, end === -1 ? out.length : end);
    if (end === -1) end = out.length;
    const a = rec.indexOf(0x20);
    const b = rec.indexOf(0x20, a + 1);
    if (a < 0 || b < 0) continue;
    const names = splitBytes(rec.subarray(b + 1), 0x2f).map(shownName);
    const parts = [...prefix, ...names.map((n) => n.text)];
    const escaped = names.some((n) => n.escaped);
    const type = TYPES[rec.toString('latin1', 0, a)] ?? 'other';
    entries.push({ parts, entry: { path: parts.join('/'), type, size: Number(rec.toString('latin1', a + 1, b)), ...(escaped ? { escaped: true as const } : {}) } });
  }
  // Depth-first, siblings by name: what walking each directory in sorted order gives.
  entries.sort((x, y) => {
    const n = Math.min(x.parts.length, y.parts.length);
    for (let i = 0; i < n; i++) {
      const p = x.parts[i] as string;
      const q = y.parts[i] as string;
      if (p !== q) return p < q ? -1 : 1;
    }
    return x.parts.length - y.parts.length;
  });
  return entries.slice(0, max).map((e) => e.entry);
}
