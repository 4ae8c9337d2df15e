// Lexical path check for paths the model writes, shared with the sandbox (same rules: `/workspace/...`
// is the workspace, other absolute paths and `..` are escapes). The sandbox enforces the boundary at
// the kernel level, symlinks included; this is the cheap first gate, so that a patch naming `../x`
// is refused before anything is read or written.
import { assertNotHidden, workspaceComponents } from 'rft-endpoints/sandbox';
import type { Item } from 'rft-endpoints';

/**
 * Normalizes a workspace-relative path (`./a//b` -> `a/b`, `/workspace/a` -> `a`); `.` for the root.
 * Given the row, also refuses the task's hidden folder (RFT_ERR_HIDDEN_PATH).
 */
export function workspacePath(raw: string, item?: Item): string {
  const path = workspaceComponents(raw.trim()).join('/') || '.';
  if (item) assertNotHidden(path, item);
  return path;
}
