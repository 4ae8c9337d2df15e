// Parser for unified diffs (`diff -u`, `git diff`): `--- a/x` / `+++ b/x` headers, `@@ -l,s +l,s @@`
// hunks, `/dev/null` for added and deleted files, git's `rename from/to`. Hunk line counts are used
// when they add up and ignored when they do not: models often get them wrong, and the lines
// themselves say enough.
import { errors } from 'rft-endpoints';
import type { ParsedPatch, PatchOp, UpdateChunk } from './types.js';

const HUNK_RE = /^@@+ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@+(.*)$/;

export function looksLikeUnifiedDiff(text: string): boolean {
  return /^(---|diff --git) /m.test(text) && /^@@ -\d/m.test(text);
}

/** `a/src/x.py\t2024-01-01 ...` -> `src/x.py`; null for /dev/null. */
function headerPath(raw: string, prefix: 'a/' | 'b/'): string | null {
  let p = raw.split('\t')[0]!.trim();
  if (p.startsWith('"') && p.endsWith('"')) p = p.slice(1, -1);
  if (p === '/dev/null') return null;
  return p.startsWith(prefix) ? p.slice(prefix.length) : p;
}

interface FileSection {
  oldPath: string | null;
  newPath: string | null;
  renameFrom?: string;
  renameTo?: string;
  chunks: UpdateChunk[];
  line: number;
}

export function parseUnifiedDiff(text: string): ParsedPatch {
  const lines = text.replace(/\r\n/g, '\n').split('\n');
  const sections: FileSection[] = [];
  let cur: FileSection | null = null;
  let pendingRename: { from?: string; to?: string } = {};
  let i = 0;

  while (i < lines.length) {
    const l = lines[i] as string;
    if (l.startsWith('diff --git ')) {
      pendingRename = {};
      cur = null;
      i++;
    } else if (l.startsWith('rename from ')) {
      pendingRename.from = l.slice('rename from '.length).trim();
      i++;
    } else if (l.startsWith('rename to ')) {
      pendingRename.to = l.slice('rename to '.length).trim();
      i++;
    } else if (l.startsWith('--- ') && (lines[i + 1] ?? '').startsWith('+++ ')) {
      cur = {
        oldPath: headerPath(l.slice(4), 'a/'),
        newPath: headerPath((lines[i + 1] as string).slice(4), 'b/'),
        chunks: [],
        line: i + 1,
        ...(pendingRename.from !== undefined ? { renameFrom: pendingRename.from } : {}),
        ...(pendingRename.to !== undefined ? { renameTo: pendingRename.to } : {}),
      };
      pendingRename = {};
      sections.push(cur);
      i += 2;
    } else if (l.startsWith('@@')) {
      if (!cur) throw errors.patchInvalid(i + 1, 'hunk before any "--- a/<path>" / "+++ b/<path>" header');
      const parsed = parseHunk(lines, i);
      cur.chunks.push(parsed.chunk);
      i = parsed.next;
    } else {
      i++; // index lines, mode lines, commit messages, blank separators
    }
  }
  if (pendingRename.from !== undefined && pendingRename.to !== undefined) {
    // a pure rename (git diff -M with 100% similarity) has no ---/+++ headers
    sections.push({ oldPath: pendingRename.from, newPath: pendingRename.to, renameFrom: pendingRename.from, renameTo: pendingRename.to, chunks: [], line: lines.length });
  }
  if (sections.length === 0) throw errors.patchInvalid(1, 'no "--- a/<path>" / "+++ b/<path>" file header found');
  return { format: 'unified', ops: sections.map(toOp) };
}

function toOp(s: FileSection): PatchOp {
  if (s.oldPath === null && s.newPath === null) throw errors.patchInvalid(s.line, 'both sides are /dev/null');
  if (s.oldPath === null) {
    const newLines = s.chunks.flatMap((c) => c.newLines);
    const noEol = s.chunks.at(-1)?.noNewlineAtEnd ?? false;
    return { kind: 'add', path: s.newPath as string, contents: newLines.join('\n') + (noEol || newLines.length === 0 ? '' : '\n') };
  }
  if (s.newPath === null) return { kind: 'delete', path: s.oldPath };
  const from = s.renameFrom ?? s.oldPath;
  const to = s.renameTo ?? s.newPath;
  if (s.chunks.length === 0 && from === to) throw errors.patchInvalid(s.line, `"${from}" has a header but no hunks`);
  return { kind: 'update', path: from, moveTo: to !== from ? to : null, chunks: s.chunks };
}

function parseHunk(lines: string[], start: number): { chunk: UpdateChunk; next: number } {
  const header = lines[start] as string;
  const m = HUNK_RE.exec(header);
  if (!m) throw errors.patchInvalid(start + 1, `malformed hunk header "${header.slice(0, 80)}"; expected "@@ -l,s +l,s @@"`);
  const oldStart = Number(m[1]);
  let oldLeft = m[2] !== undefined ? Number(m[2]) : 1;
  let newLeft = m[4] !== undefined ? Number(m[4]) : 1;
  const chunk: UpdateChunk = {
    context: null,
    oldLines: [],
    newLines: [],
    tags: '',
    endOfFile: false,
    // `-0,0` (insertion into an empty file) starts before line 1
    lineHint: oldStart > 0 ? oldStart : 1,
    noNewlineAtEnd: false,
    header: header.trim(),
  };
  let i = start + 1;
  let blankTail = 0; // trailing context lines that were empty lines in the diff text
  for (; i < lines.length; i++) {
    const l = lines[i] as string;
    if (l.startsWith('\\')) {
      // "\ No newline at end of file" applies to the line just before it
      if (lines[i - 1]?.[0] !== '-') chunk.noNewlineAtEnd = true;
      continue;
    }
    if (l.startsWith('@@') || (l.startsWith('--- ') && (lines[i + 1] ?? '').startsWith('+++ ')) || l.startsWith('diff --git ')) break;
    const tag = l[0];
    if (tag === undefined) {
      // an empty line is a context line whose trailing space was stripped, unless the counts are met
      if ((oldLeft <= 0 && newLeft <= 0) || i === lines.length - 1) break;
      blankTail++;
    } else if (tag === ' ' || tag === '+' || tag === '-') {
      blankTail = 0;
    } else {
      break;
    }
    chunk.tags += tag === undefined ? ' ' : tag;
    if (tag !== '+') {
      chunk.oldLines.push(l.slice(1));
      oldLeft--;
    }
    if (tag !== '-') {
      chunk.newLines.push(l.slice(1));
      newLeft--;
    }
  }
  // With counts that do not add up, trailing empty lines were separators between sections.
  if (oldLeft !== 0 || newLeft !== 0) {
    for (; blankTail > 0; blankTail--) {
      chunk.oldLines.pop();
      chunk.newLines.pop();
      chunk.tags = chunk.tags.slice(0, -1);
    }
  }
  if (chunk.oldLines.length === 0 && chunk.newLines.length === 0) throw errors.patchInvalid(start + 1, 'hunk has no lines');
  return { chunk, next: i };
}
