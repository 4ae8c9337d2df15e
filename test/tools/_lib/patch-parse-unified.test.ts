import { describe, expect, it } from 'vitest';
import { errors } from '../../../src/errors.js';
import { parsePatch, parseUnifiedDiff } from '../../../tools/_lib/patch/index.js';

describe('unified diff parser', () => {
  it('parses a git diff update with line hints and strips a/ b/ prefixes', () => {
    const p = parsePatch(
      'diff --git a/src/x.py b/src/x.py\nindex 1..2 100644\n--- a/src/x.py\n+++ b/src/x.py\n@@ -2,3 +2,3 @@ def f():\n a\n-b\n+B\n c\n',
    );
    expect(p.format).toBe('unified');
    expect(p.ops).toEqual([
      {
        kind: 'update',
        path: 'src/x.py',
        moveTo: null,
        chunks: [expect.objectContaining({ oldLines: ['a', 'b', 'c'], newLines: ['a', 'B', 'c'], lineHint: 2 })],
      },
    ]);
  });

  it('turns /dev/null on the old side into an added file', () => {
    const p = parseUnifiedDiff('--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1,2 @@\n+one\n+two\n');
    expect(p.ops).toEqual([{ kind: 'add', path: 'new.txt', contents: 'one\ntwo\n' }]);
  });

  it('turns /dev/null on the new side into a deleted file', () => {
    const p = parseUnifiedDiff('--- a/gone.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n');
    expect(p.ops).toEqual([{ kind: 'delete', path: 'gone.txt' }]);
  });

  it('reads a git rename as an update with a move', () => {
    const p = parseUnifiedDiff(
      'diff --git a/a.txt b/b.txt\nsimilarity index 80%\nrename from a.txt\nrename to b.txt\n--- a/a.txt\n+++ b/b.txt\n@@ -1 +1 @@\n-x\n+y\n',
    );
    expect(p.ops[0]).toMatchObject({ kind: 'update', path: 'a.txt', moveTo: 'b.txt' });
  });

  it('parses several files and several hunks', () => {
    const p = parseUnifiedDiff(
      '--- a/one\n+++ b/one\n@@ -1,2 +1,2 @@\n-a\n+A\n b\n@@ -10,1 +10,1 @@\n-j\n+J\n--- a/two\n+++ b/two\n@@ -1 +1 @@\n-x\n+X\n',
    );
    expect(p.ops.map((o) => (o.kind === 'update' ? `${o.path}:${o.chunks.length}` : o.kind))).toEqual(['one:2', 'two:1']);
  });

  it('keeps going past wrong hunk counts instead of dropping lines', () => {
    const p = parseUnifiedDiff('--- a/f\n+++ b/f\n@@ -1,1 +1,1 @@\n a\n-b\n+B\n c\n');
    const op = p.ops[0];
    expect(op?.kind === 'update' && op.chunks[0]?.oldLines).toEqual(['a', 'b', 'c']);
  });

  it('reads an empty line inside a hunk as an empty context line', () => {
    const p = parseUnifiedDiff('--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n\n-b\n+B\n');
    const op = p.ops[0];
    expect(op?.kind === 'update' && op.chunks[0]?.oldLines).toEqual(['a', '', 'b']);
  });

  it('records "No newline at end of file" on the new side', () => {
    const p = parseUnifiedDiff('--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n\\ No newline at end of file\n');
    const op = p.ops[0];
    expect(op?.kind === 'update' && op.chunks[0]?.noNewlineAtEnd).toBe(true);
  });

  it('refuses a hunk that comes before any file header', () => {
    try {
      parseUnifiedDiff('@@ -1 +1 @@\n-a\n+b\n--- a/f\n+++ b/f\n');
      expect.unreachable();
    } catch (e) {
      expect((e as { code: string }).code).toBe(errors.patchInvalid.code);
    }
  });

  it('refuses a malformed hunk header', () => {
    try {
      parseUnifiedDiff('--- a/f\n+++ b/f\n@@ -x +y @@\n-a\n');
      expect.unreachable();
    } catch (e) {
      expect((e as { code: string }).code).toBe(errors.patchInvalid.code);
    }
  });
});
