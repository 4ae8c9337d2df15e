import { describe, expect, it } from 'vitest';
import { errors } from '../../../src/errors.js';
import { parseCodexPatch, parsePatch } from '../../../tools/_lib/patch/index.js';
import { codeOf } from '../../helpers/codes.js';

const wrap = (body: string) => `*** Begin Patch\n${body}\n*** End Patch`;

describe('Codex patch parser', () => {
  it('parses an Add File section into its contents with a final newline', () => {
    const p = parseCodexPatch(wrap('*** Add File: src/a.py\n+x = 1\n+\n+y = 2'));
    expect(p.ops).toEqual([{ kind: 'add', path: 'src/a.py', contents: 'x = 1\n\ny = 2\n' }]);
  });

  it('parses a Delete File section', () => {
    expect(parseCodexPatch(wrap('*** Delete File: old.txt')).ops).toEqual([{ kind: 'delete', path: 'old.txt' }]);
  });

  it('parses an Update File section with a Move to and a context header', () => {
    const p = parseCodexPatch(wrap('*** Update File: a.py\n*** Move to: b.py\n@@ def f():\n-    pass\n+    return 1'));
    expect(p.ops).toEqual([
      {
        kind: 'update',
        path: 'a.py',
        moveTo: 'b.py',
        chunks: [
          expect.objectContaining({ context: 'def f():', oldLines: ['    pass'], newLines: ['    return 1'], endOfFile: false }),
        ],
      },
    ]);
  });

  it('splits several @@ chunks and keeps context lines on both sides', () => {
    const p = parseCodexPatch(wrap('*** Update File: m.txt\n@@\n foo\n-bar\n+BAR\n@@\n baz\n-qux\n+QUX'));
    const op = p.ops[0];
    expect(op?.kind).toBe('update');
    if (op?.kind !== 'update') return;
    expect(op.chunks.map((c) => [c.oldLines, c.newLines])).toEqual([
      [['foo', 'bar'], ['foo', 'BAR']],
      [['baz', 'qux'], ['baz', 'QUX']],
    ]);
  });

  it('marks a chunk that ends with *** End of File', () => {
    const p = parseCodexPatch(wrap('*** Update File: m.txt\n@@\n f\n+g\n*** End of File'));
    const op = p.ops[0];
    expect(op?.kind === 'update' && op.chunks[0]?.endOfFile).toBe(true);
  });

  it('accepts a first chunk without @@ and several files in one patch', () => {
    const p = parseCodexPatch(wrap('*** Update File: a.py\n import os\n+import sys\n*** Add File: b.py\n+b\n*** Delete File: c.py'));
    expect(p.ops.map((o) => `${o.kind}:${o.path}`)).toEqual(['update:a.py', 'add:b.py', 'delete:c.py']);
  });

  it('treats a blank line inside a chunk as an empty context line', () => {
    const p = parseCodexPatch(wrap('*** Update File: a.py\n@@\n a\n\n-b\n+B'));
    const op = p.ops[0];
    expect(op?.kind === 'update' && op.chunks[0]?.oldLines).toEqual(['a', '', 'b']);
  });

  it('tolerates padding around markers and a heredoc wrapper', () => {
    const p = parsePatch("<<'EOF'\n  *** Begin Patch  \n*** Add File: x\n+1\n *** End Patch\nEOF\n");
    expect(p.ops).toEqual([{ kind: 'add', path: 'x', contents: '1\n' }]);
  });

  it('ignores a Markdown code fence around the whole patch, for either format', () => {
    expect(parsePatch('```\n*** Begin Patch\n*** Delete File: x\n*** End Patch\n```\n').ops).toEqual([{ kind: 'delete', path: 'x' }]);
    expect(parsePatch('```diff\n--- a/x\n+++ /dev/null\n@@ -1 +0,0 @@\n-a\n```').ops).toEqual([{ kind: 'delete', path: 'x' }]);
  });

  it('refuses a patch without its End Patch line', () => {
    expect(codeOf(() => parseCodexPatch('*** Begin Patch\n*** Add File: x\n+1'))).toBe(errors.patchInvalid.code);
  });

  it('refuses an unknown section header and names its line', () => {
    try {
      parseCodexPatch(wrap('*** Add File: ok\n+1\n*** Rename File: x'));
      expect.unreachable();
    } catch (e) {
      expect((e as { code: string }).code).toBe(errors.patchInvalid.code);
      expect((e as { details: { line: number } }).details.line).toBe(4);
    }
  });

  it('refuses an Update File with no hunks', () => {
    expect(codeOf(() => parseCodexPatch(wrap('*** Update File: a.py')))).toBe(errors.patchInvalid.code);
  });

  it('refuses a hunk line without a diff prefix', () => {
    expect(codeOf(() => parseCodexPatch(wrap('*** Update File: a.py\n@@\nfoo')))).toBe(errors.patchInvalid.code);
  });

  it('refuses text that is neither format', () => {
    expect(codeOf(() => parsePatch('please change line 3'))).toBe(errors.patchInvalid.code);
  });
});
