import { describe, expect, it } from 'vitest';
import { errors } from '../../../src/errors.js';
import { applyChunks, parsePatch, planPatch, seekSequence } from '../../../tools/_lib/patch/index.js';

const wrap = (body: string) => `*** Begin Patch\n${body}\n*** End Patch`;

/** An in-memory workspace: the planner only reads, so this is the whole environment it needs. */
function files(init: Record<string, string>) {
  const m = new Map(Object.entries(init));
  return { read: async (p: string) => m.get(p) ?? null, m };
}

async function apply(init: Record<string, string>, patch: string) {
  const fs = files(init);
  const plan = await planPatch(parsePatch(patch), fs.read);
  for (const c of plan.changes) {
    if (c.content === null) fs.m.delete(c.path);
    else fs.m.set(c.path, c.content);
  }
  return { out: Object.fromEntries(fs.m), plan };
}

async function failure(init: Record<string, string>, patch: string) {
  try {
    await planPatch(parsePatch(patch), files(init).read);
  } catch (e) {
    return e as { code: string; message: string; details?: Record<string, unknown> };
  }
  throw new Error('expected the patch to fail');
}

describe('seekSequence', () => {
  it('prefers an exact match over a looser earlier one', () => {
    expect(seekSequence(['x ', 'x'], ['x'], 0)).toBe(1);
  });

  it('falls back to ignoring trailing whitespace', () => {
    expect(seekSequence(['foo   ', 'bar\t'], ['foo', 'bar'], 0)).toBe(0);
  });

  it('falls back to ignoring indentation', () => {
    expect(seekSequence(['    foo', '  bar'], ['foo', 'bar'], 0)).toBe(0);
  });

  it('folds typographic dashes and quotes to ASCII as the last resort', () => {
    expect(seekSequence(['a \u2013 \u201Cb\u201D'], ['a - "b"'], 0)).toBe(0);
  });

  it('returns -1 when the pattern is longer than the file', () => {
    expect(seekSequence(['one'], ['one', 'two'], 0)).toBe(-1);
  });

  it('looks at the end of the file first for an End of File chunk', () => {
    expect(seekSequence(['a', 'b', 'a'], ['a'], 0, { eof: true })).toBe(2);
  });
});

describe('patch applier', () => {
  it('adds a file', async () => {
    const { out } = await apply({}, wrap('*** Add File: d/new.txt\n+hi'));
    expect(out).toEqual({ 'd/new.txt': 'hi\n' });
  });

  it('deletes a file', async () => {
    const { out, plan } = await apply({ 'a.txt': 'x\n', 'b.txt': 'y\n' }, wrap('*** Delete File: a.txt'));
    expect(out).toEqual({ 'b.txt': 'y\n' });
    expect(plan.changes).toEqual([{ path: 'a.txt', action: 'delete', content: null }]);
  });

  it('updates a file with context, removal and addition', async () => {
    const { out } = await apply({ 'u.txt': 'foo\nbar\n' }, wrap('*** Update File: u.txt\n@@\n foo\n-bar\n+baz'));
    expect(out['u.txt']).toBe('foo\nbaz\n');
  });

  it('applies interleaved chunks including an append at End of File', async () => {
    const patch = wrap('*** Update File: f\n@@\n a\n-b\n+B\n@@\n c\n d\n-e\n+E\n@@\n f\n+g\n*** End of File');
    const { out } = await apply({ f: 'a\nb\nc\nd\ne\nf\n' }, patch);
    expect(out.f).toBe('a\nB\nc\nd\nE\nf\ng\n');
  });

  it('uses the @@ context line to pick the right occurrence', async () => {
    const src = 'def a():\n    return 0\n\ndef b():\n    return 0\n';
    const { out } = await apply({ 'm.py': src }, wrap('*** Update File: m.py\n@@ def b():\n-    return 0\n+    return 2'));
    expect(out['m.py']).toBe('def a():\n    return 0\n\ndef b():\n    return 2\n');
  });

  it('inserts right after the @@ context line when a chunk has no old lines', async () => {
    const { out } = await apply({ 'm.py': 'import os\nx = 1\n' }, wrap('*** Update File: m.py\n@@ import os\n+import sys'));
    expect(out['m.py']).toBe('import os\nimport sys\nx = 1\n');
  });

  it('matches context that differs only in whitespace', async () => {
    const { out } = await apply({ 'w.py': 'if x:  \n\treturn 1\n' }, wrap('*** Update File: w.py\n@@\n if x:\n-    return 1\n+    return 2'));
    expect(out['w.py']).toBe('if x:  \n    return 2\n');
  });

  it('moves a file while updating it', async () => {
    const { out, plan } = await apply({ 'src.txt': 'line\n' }, wrap('*** Update File: src.txt\n*** Move to: dst/d.txt\n@@\n-line\n+line2'));
    expect(out).toEqual({ 'dst/d.txt': 'line2\n' });
    expect(plan.changes.find((c) => c.path === 'dst/d.txt')?.movedFrom).toBe('src.txt');
  });

  it('keeps CRLF line endings', async () => {
    const { out } = await apply({ 'w.txt': 'a\r\nb\r\n' }, wrap('*** Update File: w.txt\n@@\n a\n-b\n+c'));
    expect(out['w.txt']).toBe('a\r\nc\r\n');
  });

  it('leaves every file untouched when a later hunk does not match', async () => {
    const init = { 'a.txt': 'one\n', 'b.txt': 'two\n' };
    const e = await failure(init, wrap('*** Update File: a.txt\n@@\n-one\n+ONE\n*** Update File: b.txt\n@@\n-zwei\n+TWO'));
    expect(e.code).toBe(errors.patchConflict.code);
    expect(e.details).toEqual({ file: 'b.txt', hunk: 1 });
    expect(e.message).toContain('zwei');
  });

  it('names the second hunk when only the second hunk of a file fails', async () => {
    const e = await failure({ f: 'a\nb\n' }, wrap('*** Update File: f\n@@\n-a\n+A\n@@\n-nope\n+x'));
    expect(e.details).toEqual({ file: 'f', hunk: 2 });
  });

  it('refuses to update a file that does not exist', async () => {
    const e = await failure({}, wrap('*** Update File: ghost.py\n@@\n-a\n+b'));
    expect(e.code).toBe(errors.patchConflict.code);
  });

  it('refuses to delete a file that does not exist', async () => {
    expect((await failure({}, wrap('*** Delete File: ghost.py'))).code).toBe(errors.patchConflict.code);
  });

  it('refuses paths that climb out of the workspace before reading anything', async () => {
    let reads = 0;
    const read = async () => {
      reads++;
      return 'x\n';
    };
    for (const p of ['../outside.txt', '/etc/passwd', 'a/../../b']) {
      await expect(planPatch(parsePatch(wrap(`*** Delete File: ${p}`)), read)).rejects.toMatchObject({ code: errors.pathEscape.code });
    }
    expect(reads).toBe(0);
  });

  it('lets a later section see an earlier one of the same patch', async () => {
    const { out } = await apply({}, wrap('*** Add File: n.txt\n+a\n*** Update File: n.txt\n@@\n-a\n+b'));
    expect(out).toEqual({ 'n.txt': 'b\n' });
  });

  it('applies a unified diff at its line numbers', async () => {
    const src = 'x\ny\nx\ny\n';
    const { out } = await apply({ 'f.txt': src }, '--- a/f.txt\n+++ b/f.txt\n@@ -3,2 +3,2 @@\n x\n-y\n+Y\n');
    expect(out['f.txt']).toBe('x\ny\nx\nY\n');
  });

  it('applies a unified diff that adds, deletes and renames files', async () => {
    const diff =
      '--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1 @@\n+n\n' +
      '--- a/old.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-o\n' +
      'diff --git a/r1 b/r2\nrename from r1\nrename to r2\n';
    const { out } = await apply({ 'old.txt': 'o\n', r1: 'r\n' }, diff);
    expect(out).toEqual({ 'new.txt': 'n\n', r2: 'r\n' });
  });

  it('honours "No newline at end of file" in a unified diff', async () => {
    const { out } = await apply({ f: 'a\n' }, '--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n\\ No newline at end of file\n');
    expect(out.f).toBe('b');
  });

  it('keeps a missing final newline when the patch does not touch the end', () => {
    expect(applyChunks('a\nb\nc', [{ context: null, oldLines: ['a'], newLines: ['A'], tags: '-+', endOfFile: false, lineHint: null, noNewlineAtEnd: false, header: '@@' }], 'f')).toBe('A\nb\nc');
  });
});
