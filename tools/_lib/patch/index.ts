// Patch parsing and applying, as pure code: the apply_patch tool reads and writes through the sandbox.
import { errors } from 'rft-endpoints';
import { looksLikeCodexPatch, parseCodexPatch } from './parse-codex.js';
import { looksLikeUnifiedDiff, parseUnifiedDiff } from './parse-unified.js';
import type { ParsedPatch } from './types.js';

export { planPatch, applyChunks } from './apply.js';
export type { PatchPlan, ReadFn } from './apply.js';
export { seekSequence } from './seek.js';
export { workspacePath } from './paths.js';
export { parseCodexPatch, parseUnifiedDiff };
export type { ParsedPatch, PatchOp, UpdateChunk, FileChange } from './types.js';

/** A Markdown code fence around the whole patch (models add them) is not part of it. */
function unfence(text: string): string {
  const m = /^\s*```[\w-]*[ \t]*\r?\n([\s\S]*?)\r?\n```\s*$/.exec(text);
  return m ? (m[1] as string) : text;
}

/** Parses either format: `*** Begin Patch` or a unified diff (`--- a/x` / `+++ b/x` / `@@`). */
export function parsePatch(raw: string): ParsedPatch {
  const text = unfence(raw);
  if (looksLikeCodexPatch(text)) return parseCodexPatch(text);
  if (looksLikeUnifiedDiff(text)) return parseUnifiedDiff(text);
  throw errors.patchInvalid(
    1,
    'not a patch: expected "*** Begin Patch" ... "*** End Patch", or a unified diff with "--- a/<path>", "+++ b/<path>" and "@@ -l,s +l,s @@" hunks',
  );
}
