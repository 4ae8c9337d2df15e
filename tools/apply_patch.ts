// Applies a patch (Codex `*** Begin Patch` format or a unified diff) to the workspace. Every hunk is
// located before anything is written; if a write still fails midway (a path the sandbox refuses),
// the files already written are restored, so a patch applies whole or not at all.
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

async function rollback(sandbox: Sandbox, originals: Map<string, string | null>): Promise<void> {
  for (const [path, content] of originals) {
    try {
      if (content === null) await removeFile(sandbox, path);
      else await sandbox.writeFile(path, content);
    } catch {
      // best effort: the path that failed the write usually fails here too, and held nothing
    }
  }
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
    try {
      await write(sandbox, plan.changes);
    } catch (e) {
      await rollback(sandbox, plan.originals);
      throw e;
    }
    return summary(plan.changes);
  },
});
