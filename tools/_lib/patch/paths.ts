// Lexical path check for paths the model writes, shared with the sandbox (same rules: `/workspace/...`
// is the workspace, other absolute paths and `..` are escapes). The sandbox enforces the boundary at
// the kernel level, symlinks included; this is the cheap first gate, so that a patch naming `../x`
// is refused before anything is read or written.
import { workspaceComponents } from '../../../src/sandbox/paths.js';

/** Normalizes a workspace-relative path (`./a//b` -> `a/b`, `/workspace/a` -> `a`); `.` for the root. */
export function workspacePath(raw: string): string {
  return workspaceComponents(raw.trim()).join('/') || '.';
}
