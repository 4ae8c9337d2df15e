// Applies a patch (Codex `*** Begin Patch` format or a unified diff) to the workspace. Every hunk is
// located before anything is written; if a write still fails midway (a path the sandbox refuses, a
// file where the patch needs a directory), the files already written are restored and the
// directories the writes created are removed, so a patch applies whole or leaves the workspace as it was.
import { z, defineTool, type Sandbox, errors, isRftError } from 'rft-endpoints';
import { parsePatch, planPatch, type FileChange } from './_lib/patch/index.js';
import { assertNotHidden } from 'rft-endpoints/sandbox';

async function readOrNull(sandbox: Sandbox, path: string): Promise<string | null> {
  try {
    return (await sandbox.readFile(path)).toString('utf8');
  } catch (e) {
    if (isRftError(e) && e.code === errors.notFound.code) return null;
    throw e;
  }
}

async function removeFile(sandbox: Sandbox, path: string): Promise<void> {
  // The Sandbox interface has no delete; argv (no shell) so the path is never interpreted.
  const r = await sandbox.exec(['rm', '-f', '--', path], { timeoutMs: 10_000 });
  // rm failing is the workspace's state (a directory, permissions the rollout took away): the model reads why.
  if (r.exitCode !== 0) throw errors.fileRefused(path, `could not delete: ${r.stderr.trim().replace(/^rm: /, '')}`);
}

async function write(sandbox: Sandbox, changes: FileChange[]): Promise<void> {
  // Writes before deletes, so a move never loses the file when the destination write fails.
  for (const c of changes) if (c.content !== null) await sandbox.writeFile(c.path, c.content);
  for (const c of changes) if (c.content === null) await removeFile(sandbox, c.path);
}

/** The directories above `path`, nearest the root first (`a/b/c` -> `a`, `a/b`). */
function ancestors(path: string): string[] {
  const parts = path.split('/').slice(0, -1);
  return parts.map((_, i) => parts.slice(0, i + 1).join('/'));
}

/**
 * Directories a write will create (writeFile makes missing parents): those above the files the patch
 * adds that do not exist yet. The rollback removes them, or a failed patch would leave them behind.
 */
async function missingDirs(sandbox: Sandbox, changes: FileChange[], originals: Map<string, string | null>): Promise<string[]> {
  const dirs = [...new Set(changes.filter((c) => c.content !== null && originals.get(c.path) === null).flatMap((c) => ancestors(c.path)))];
  if (dirs.length === 0) return [];
  // argv (no shell interpretation of the paths); a dangling symlink exists too (the write would refuse it, not replace it).
  const r = await sandbox.exec(['sh', '-c', 'for d do [ -e "$d" ] || [ -L "$d" ] || printf "%s\\0" "$d"; done', 'sh', ...dirs], { timeoutMs: 10_000 });
  if (r.exitCode !== 0) throw errors.fileRefused(dirs[0] as string, `could not inspect the workspace: ${r.stderr.trim()}`);
  return r.stdout.split('\0').filter((d) => d !== '');
}

async function rollback(sandbox: Sandbox, originals: Map<string, string | null>, createdDirs: string[]): Promise<void> {
  for (const [path, content] of originals) {
    try {
      if (content === null) await removeFile(sandbox, path);
      else await sandbox.writeFile(path, content);
    } catch {
      // best effort: the path that failed the write usually fails here too, and held nothing
    }
  }
  if (createdDirs.length === 0) return;
  // Deepest first; rmdir removes only empty ones, so nothing the rollout put there since is lost.
  const deepestFirst = [...createdDirs].sort((a, b) => b.split('/').length - a.split('/').length);
  await sandbox.exec(['rmdir', '--', ...deepestFirst], { timeoutMs: 10_000 }).catch(() => undefined);
}

function summary(changes: FileChange[]): string {
  const moved = new Set(changes.flatMap((c) => (c.movedFrom !== undefined ? [c.movedFrom] : [])));
  const lines = changes
    .filter((c) => !(c.action === 'delete' && moved.has(c.path)))
    .map((c) => {
      if (c.movedFrom !== undefined) return `M ${c.path} (moved from ${c.movedFrom})`;
      return `${c.action === 'add' ? 'A' : c.action === 'delete' ? 'D' : 'M'} ${c.path}`;
    });
  return lines.length ? `Success. Updated the following files:\n${lines.join('\n')}` : 'The patch changed nothing.';
}

export default defineTool({
  name: 'apply_patch',
  description:
    'Edit files with a patch. Preferred format:\n' +
    '*** Begin Patch\n*** Update File: path/to/file.py\n@@ def some_function():\n-    old line\n+    new line\n*** End Patch\n' +
    'Sections: "*** Add File: <path>" (every content line starts with +), "*** Delete File: <path>", ' +
    '"*** Update File: <path>" (optionally followed by "*** Move to: <new path>") with @@ hunks whose lines start with ' +
    '" " (context, about 3 lines around each change), "-" (remove) or "+" (add). A unified diff (--- a/x, +++ b/x, @@ -l,s +l,s @@) also works. ' +
    'The patch applies completely or not at all.',
  parameters: z.object({
    patch: z.string().min(1).max(512 * 1024).describe('The patch text: "*** Begin Patch" ... "*** End Patch", or a unified diff'),
  }),
  serial: true,
  async handler(args, ctx) {
    const parsed = parsePatch(args.patch);
    const sandbox = await ctx.sandbox();
    // Every path the patch touches (a move's destination too) is read first: the hidden folder is refused there.
    const plan = await planPatch(parsed, (p) => {
      assertNotHidden(p, ctx.item);
      return readOrNull(sandbox, p);
    });
    const created = await missingDirs(sandbox, plan.changes, plan.originals);
    try {
      await write(sandbox, plan.changes);
    } catch (e) {
      await rollback(sandbox, plan.originals, created);
      throw e;
    }
    return summary(plan.changes);
  },
});
