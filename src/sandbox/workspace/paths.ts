// Lexical checks on workspace-relative paths. Symlinks are handled where files are opened
// (host-fs.ts); this only refuses what can never be inside the workspace.
import { isUtf8 } from 'node:buffer';
import { errors } from '../../errors.js';

/**
 * A file name as the model reads it: a UTF-8 name as is; one that is not (any bytes but / and NUL
 * make a Linux name) with its bytes from 0x80 and its backslashes written \xNN, as `ls -b` does,
 * so it is shown instead of dropped or garbled. `escaped`: the text is not the name itself.
 */
export function shownName(name: Buffer): { text: string; escaped: boolean } {
  if (isUtf8(name)) return { text: name.toString('utf8'), escaped: false };
  let text = '';
  for (const b of name) text += b >= 0x80 || b === 0x5c ? `\\x${b.toString(16).padStart(2, '0')}` : String.fromCharCode(b);
  return { text, escaped: true };
}

/** Where the workspace appears inside bwrap and docker sandboxes; the model sees and quotes this path. */
export const WORKSPACE_MOUNT = '/workspace';

/**
 * Splits a workspace-relative path into components. `/workspace/...` is accepted as the same path,
 * because that is what the model sees in `pwd`; any other absolute path, `..` and NUL are escapes.
 */
export function workspaceComponents(path: string): string[] {
  let rel = path;
  if (rel === WORKSPACE_MOUNT || rel.startsWith(WORKSPACE_MOUNT + '/')) rel = rel.slice(WORKSPACE_MOUNT.length);
  else if (rel.startsWith('/')) throw errors.pathEscape(path);
  if (rel.includes('\0') || rel.startsWith('\\')) throw errors.pathEscape(path);
  const parts = rel.split('/').filter((p) => p !== '' && p !== '.');
  if (parts.some((p) => p === '..')) throw errors.pathEscape(path);
  return parts;
}
