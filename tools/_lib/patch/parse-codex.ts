// Parser for the Codex / OpenAI apply_patch format:
//
//   *** Begin Patch
//   *** Add File: path        then "+line" lines
//   *** Delete File: path
//   *** Update File: path     then optional "*** Move to: path", then chunks:
//   @@ [context line]         then " ctx", "-old", "+new" lines, optionally "*** End of File"
//   *** End Patch
//
// Lenient like the published parser: markers may carry surrounding whitespace, the body may be
// wrapped in a `<<'EOF' ... EOF` heredoc, the first chunk of an update may omit its `@@`, and a
// blank line inside a chunk is an empty context line.
import { errors } from 'rft-endpoints';
import type { ParsedPatch, PatchOp, UpdateChunk } from './types.js';

const BEGIN = '*** Begin Patch';
const END = '*** End Patch';
const ADD = '*** Add File: ';
const DELETE = '*** Delete File: ';
const UPDATE = '*** Update File: ';
const MOVE = '*** Move to: ';
const EOF_MARK = '*** End of File';

export function looksLikeCodexPatch(text: string): boolean {
  return /^\s*(<<['"]?EOF['"]?\s*\n\s*)?\*\*\* Begin Patch/.test(text);
}

/** Splits off the Begin/End markers (and a heredoc wrapper); returns the body and its first line number. */
function body(text: string): { lines: string[]; firstLine: number } {
  let lines = text.trim().split(/\r?\n/);
  const first = lines[0]?.trim();
  if ((first === '<<EOF' || first === "<<'EOF'" || first === '<<"EOF"') && lines.length >= 4 && lines.at(-1)?.trim().endsWith('EOF')) {
    lines = lines.slice(1, -1);
  }
  if (lines[0]?.trim() !== BEGIN) throw errors.patchInvalid(1, `the first line must be "${BEGIN}"`);
  if (lines.length < 2 || lines.at(-1)?.trim() !== END) {
    throw errors.patchInvalid(lines.length, `the last line must be "${END}"`);
  }
  return { lines: lines.slice(1, -1), firstLine: 2 };
}

function filePath(raw: string, line: number): string {
  const p = raw.trim();
  if (!p) throw errors.patchInvalid(line, 'missing file path');
  return p;
}

export function parseCodexPatch(text: string): ParsedPatch {
  const { lines, firstLine } = body(text);
  const ops: PatchOp[] = [];
  let i = 0;
  const lineNo = (idx: number) => idx + firstLine;

  while (i < lines.length) {
    const raw = lines[i] as string;
    const head = raw.trim();
    if (head === '') {
      i++;
      continue;
    }
    if (head.startsWith(ADD)) {
      const path = filePath(head.slice(ADD.length), lineNo(i));
      i++;
      const content: string[] = [];
      while (i < lines.length && (lines[i] as string).startsWith('+')) content.push((lines[i++] as string).slice(1));
      ops.push({ kind: 'add', path, contents: content.map((l) => l + '\n').join('') });
    } else if (head.startsWith(DELETE)) {
      ops.push({ kind: 'delete', path: filePath(head.slice(DELETE.length), lineNo(i)) });
      i++;
    } else if (head.startsWith(UPDATE)) {
      const startLine = lineNo(i);
      const path = filePath(head.slice(UPDATE.length), startLine);
      i++;
      let moveTo: string | null = null;
      if (i < lines.length && (lines[i] as string).trim().startsWith(MOVE)) {
        moveTo = filePath((lines[i] as string).trim().slice(MOVE.length), lineNo(i));
        i++;
      }
      const chunks: UpdateChunk[] = [];
      while (i < lines.length) {
        const l = lines[i] as string;
        if (l.trim() === '' && chunks.length > 0 && !continuesChunk(lines, i)) {
          i++;
          continue;
        }
        if (l.startsWith('*') && l.trim() !== EOF_MARK) break;
        const parsed = parseChunk(lines, i, chunks.length === 0, lineNo);
        chunks.push(parsed.chunk);
        i = parsed.next;
      }
      if (chunks.length === 0) throw errors.patchInvalid(startLine, `update of "${path}" has no hunks`);
      ops.push({ kind: 'update', path, moveTo, chunks });
    } else {
      throw errors.patchInvalid(
        lineNo(i),
        `"${head.slice(0, 80)}" is not a file header; expected "${ADD}<path>", "${DELETE}<path>" or "${UPDATE}<path>"`,
      );
    }
  }
  return { format: 'codex', ops };
}

/** A blank line between chunks is a separator unless more diff lines of the same chunk follow it. */
function continuesChunk(lines: string[], i: number): boolean {
  for (let j = i; j < lines.length; j++) {
    const l = lines[j] as string;
    if (l.trim() === '') continue;
    return l[0] === ' ' || l[0] === '+' || l[0] === '-';
  }
  return false;
}

function parseChunk(
  lines: string[],
  start: number,
  first: boolean,
  lineNo: (i: number) => number,
): { chunk: UpdateChunk; next: number } {
  let i = start;
  const headLine = lines[i] as string;
  let context: string | null = null;
  let header = '@@';
  if (headLine.trim() === '@@') {
    i++;
  } else if (headLine.startsWith('@@ ')) {
    context = headLine.slice(3);
    header = headLine;
    i++;
  } else if (!first) {
    throw errors.patchInvalid(lineNo(i), `expected a "@@" hunk header, got "${headLine.slice(0, 80)}"`);
  }
  const chunk: UpdateChunk = {
    context,
    oldLines: [],
    newLines: [],
    tags: '',
    endOfFile: false,
    lineHint: null,
    noNewlineAtEnd: false,
    header,
  };
  let count = 0;
  for (; i < lines.length; i++) {
    const l = lines[i] as string;
    if (l.trim() === EOF_MARK) {
      if (count === 0) throw errors.patchInvalid(lineNo(i), 'hunk has no lines before "*** End of File"');
      chunk.endOfFile = true;
      i++;
      break;
    }
    const tag = l[0];
    if (tag === undefined) {
      if (!continuesChunk(lines, i + 1)) break;
      chunk.oldLines.push('');
      chunk.newLines.push('');
      chunk.tags += ' ';
    } else if (tag === ' ') {
      chunk.oldLines.push(l.slice(1));
      chunk.newLines.push(l.slice(1));
      chunk.tags += ' ';
    } else if (tag === '-') {
      chunk.oldLines.push(l.slice(1));
      chunk.tags += '-';
    } else if (tag === '+') {
      chunk.newLines.push(l.slice(1));
      chunk.tags += '+';
    } else {
      if (count === 0) {
        throw errors.patchInvalid(
          lineNo(i),
          `unexpected line "${l.slice(0, 80)}" in hunk: every line starts with " " (context), "+" (added) or "-" (removed)`,
        );
      }
      break;
    }
    count++;
  }
  if (count === 0) throw errors.patchInvalid(lineNo(start), 'hunk has no lines');
  return { chunk, next: i };
}
