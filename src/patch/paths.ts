// Lexical path checks for paths the model writes. The sandbox enforces the workspace boundary at
// the kernel level (symlinks included); this is the cheap first gate, so that a patch naming
// `../x` or `/etc/x` is refused before anything is read or written, with a message the model can act on.
import { posix } from 'node:path';
import { errors } from '../errors.js';

/** Normalizes a workspace-relative path (`./a//b` -> `a/b`); refuses absolute paths and `..` escapes. */
export function workspacePath(raw: string): string {
  const p = raw.trim().replace(/\\/g, '/');
  if (p === '' || p.includes('\0')) throw errors.toolInput(`invalid path ${JSON.stringify(raw)}`);
  if (p.startsWith('/') || /^[A-Za-z]:/.test(p)) throw errors.pathEscape(raw);
  const n = posix.normalize(p).replace(/\/+$/, '');
  if (n === '..' || n.startsWith('../')) throw errors.pathEscape(raw);
  return n === '' ? '.' : n;
}
