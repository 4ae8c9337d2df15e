// Lexical checks on workspace-relative paths. Symlinks are handled where files are opened
// (host-fs.ts); this only refuses what can never be inside the workspace.
import { errors } from '../errors.js';

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
