// Computes what a parsed patch does to the workspace without touching it: every hunk of every file
// is located first, so a patch either applies as a whole or fails with the file and hunk that did
// not match, and the caller writes nothing.
import { errors } from 'rft-endpoints';
import { workspacePath } from './paths.js';
import { seekSequence } from './seek.js';
import type { FileChange, ParsedPatch, UpdateChunk } from './types.js';

/** Reads a workspace file; null when it does not exist. Errors (path escape ...) propagate. */
export type ReadFn = (path: string) => Promise<string | null>;

export interface PatchPlan {
  changes: FileChange[];
  /** Content of each touched path before the patch (null: did not exist), for rollback. */
  originals: Map<string, string | null>;
}

export async function planPatch(patch: ParsedPatch, read: ReadFn): Promise<PatchPlan> {
  const originals = new Map<string, string | null>();
  const state = new Map<string, string | null>();
  const movedFrom = new Map<string, string>();
  const get = async (path: string): Promise<string | null> => {
    if (state.has(path)) return state.get(path) as string | null;
    const content = await read(path);
    originals.set(path, content);
    state.set(path, content);
    return content;
  };

  for (const op of patch.ops) {
    const path = workspacePath(op.path);
    if (op.kind === 'add') {
      await get(path); // remember the original for rollback; Add overwrites like the published tool
      state.set(path, op.contents);
    } else if (op.kind === 'delete') {
      if ((await get(path)) === null) throw errors.patchConflict(path, 0, 'cannot delete: file does not exist');
      state.set(path, null);
    } else {
      const before = await get(path);
      if (before === null) throw errors.patchConflict(path, 0, 'cannot update: file does not exist');
      const after = applyChunks(before, op.chunks, path);
      if (op.moveTo !== null) {
        const dest = workspacePath(op.moveTo);
        await get(dest);
        state.set(path, null);
        state.set(dest, after);
        movedFrom.set(dest, path);
      } else {
        state.set(path, after);
      }
    }
  }

  // A file the patch leaves where another of its files needs a directory can never be written whole.
  for (const [path, content] of state) {
    if (content === null) continue;
    const parent = path.split('/').slice(0, -1);
    const clash = parent.map((_, i) => parent.slice(0, i + 1).join('/')).find((dir) => typeof state.get(dir) === 'string');
    if (clash !== undefined) throw errors.patchConflict(path, 0, `cannot add: the patch also leaves a file at ${clash}, where this path needs a directory`);
  }

  const changes: FileChange[] = [];
  for (const [path, content] of state) {
    const original = originals.get(path) ?? null;
    if (content === original && !movedFrom.has(path)) continue;
    const action = content === null ? 'delete' : original === null ? 'add' : 'update';
    const from = movedFrom.get(path);
    changes.push({ path, action, content, ...(from !== undefined && content !== null ? { movedFrom: from } : {}) });
  }
  return { changes, originals };
}

function preview(lines: string[]): string {
  const shown = lines.slice(0, 6).map((l) => `  |${l}`);
  if (lines.length > 6) shown.push(`  | ... (${lines.length - 6} more lines)`);
  return shown.join('\n');
}

/**
 * The replacement for a located chunk, with context lines taken from the file rather than the
 * patch: a fuzzy match must not rewrite the indentation or trailing spaces of lines it only used
 * for orientation.
 */
function keepOriginalContext(chunk: UpdateChunk, lines: string[], at: number, len: number, insert: string[]): string[] {
  if (chunk.tags.length !== chunk.oldLines.length + chunk.newLines.length - countTag(chunk.tags, ' ')) return insert;
  const out: string[] = [];
  let j = at;
  let n = 0;
  for (const t of chunk.tags) {
    if (t === '+') {
      if (n < insert.length) out.push(insert[n] as string);
      n++;
      continue;
    }
    if (t === ' ') {
      if (j < at + len) out.push(lines[j] as string);
      n++;
    }
    j++;
  }
  return out;
}

function countTag(tags: string, t: string): number {
  let c = 0;
  for (const x of tags) if (x === t) c++;
  return c;
}

/** Applies update chunks to one file's content; throws RFT_ERR_PATCH_CONFLICT naming the hunk. */
export function applyChunks(content: string, chunks: UpdateChunk[], file: string): string {
  const crlf = content.includes('\r\n');
  const lines = content.split('\n').map((l) => (crlf && l.endsWith('\r') ? l.slice(0, -1) : l));
  const endedWithNewline = lines.at(-1) === '';
  if (endedWithNewline) lines.pop();

  const replacements: Array<{ at: number; remove: number; insert: string[]; chunk: UpdateChunk }> = [];
  let cursor = 0;
  chunks.forEach((chunk, k) => {
    const hunk = k + 1;
    if (chunk.context !== null) {
      const idx = seekSequence(lines, [chunk.context], cursor);
      if (idx < 0) throw errors.patchConflict(file, hunk, `context line not found: "${chunk.context}"`);
      cursor = idx + 1;
    }
    const hint = chunk.lineHint !== null ? chunk.lineHint - 1 : undefined;
    if (chunk.oldLines.length === 0) {
      // pure insertion: after the @@ context line, at the unified diff's line, or at the end
      const at = chunk.context !== null ? cursor : hint !== undefined ? Math.min(Math.max(hint, cursor), lines.length) : lines.length;
      replacements.push({ at, remove: 0, insert: chunk.newLines, chunk });
      cursor = at;
      return;
    }
    let pattern = chunk.oldLines;
    let insert = chunk.newLines;
    const seekOpts = { eof: chunk.endOfFile, ...(hint !== undefined ? { hint } : {}) };
    let found = seekSequence(lines, pattern, cursor, seekOpts);
    if (found < 0 && pattern.at(-1) === '') {
      // a trailing empty old line often stands for the file's final newline
      pattern = pattern.slice(0, -1);
      if (insert.at(-1) === '') insert = insert.slice(0, -1);
      found = seekSequence(lines, pattern, cursor, seekOpts);
    }
    if (found < 0) {
      throw errors.patchConflict(
        file,
        hunk,
        `${chunk.header !== '@@' ? `${chunk.header}: ` : ''}these lines were not found${cursor > 0 ? ` after line ${cursor}` : ''}` +
          ` (read the file again and copy the lines exactly):\n${preview(chunk.oldLines)}`,
      );
    }
    replacements.push({ at: found, remove: pattern.length, insert: keepOriginalContext(chunk, lines, found, pattern.length, insert), chunk });
    cursor = found + pattern.length;
  });

  const last = replacements.at(-1);
  const reachesEnd = last !== undefined && last.at + last.remove >= lines.length;
  for (const r of [...replacements].reverse()) lines.splice(r.at, r.remove, ...r.insert);
  const newline = reachesEnd ? !(last?.chunk.noNewlineAtEnd ?? false) : endedWithNewline;
  const eol = crlf ? '\r\n' : '\n';
  return lines.length === 0 ? '' : lines.join(eol) + (newline ? eol : '');
}
