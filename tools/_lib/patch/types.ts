// A parsed patch, whatever format it came in: a list of file operations. Both parsers produce this
// shape so one applier serves the Codex `*** Begin Patch` format and unified diffs.

export interface UpdateChunk {
  /** `@@ <context>` line that must appear before the old lines (Codex format), or null. */
  context: string | null;
  /** Lines the chunk replaces (context and removed lines, in order). */
  oldLines: string[];
  /** Lines that replace them (context and added lines, in order). */
  newLines: string[];
  /** One tag per hunk line, in order: ' ' context, '-' removed, '+' added. */
  tags: string;
  /** The old lines must sit at the end of the file (`*** End of File`). */
  endOfFile: boolean;
  /** 1-based line in the old file where the hunk claims to start (unified diffs only). */
  lineHint: number | null;
  /** The new side ends without a newline (`\ No newline at end of file`). */
  noNewlineAtEnd: boolean;
  /** Human label for errors: the `@@` header as written. */
  header: string;
}

export type PatchOp =
  | { kind: 'add'; path: string; contents: string }
  | { kind: 'delete'; path: string }
  | { kind: 'update'; path: string; moveTo: string | null; chunks: UpdateChunk[] };

export interface ParsedPatch {
  format: 'codex' | 'unified';
  ops: PatchOp[];
}

/** Final state of one path after the whole patch: new content, or null when it is deleted. */
export interface FileChange {
  path: string;
  action: 'add' | 'update' | 'delete';
  content: string | null;
  /** Set on the destination of a `*** Move to:` / rename. */
  movedFrom?: string;
}
