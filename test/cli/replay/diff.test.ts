import { describe, expect, it } from 'vitest';
import { DEFAULT_NORMALIZERS, forDiff, normalize, unifiedDiff, userNormalizer } from '../../../src/cli/replay/diff.js';
import { planReplay } from '../../../src/cli/replay/plan.js';
import type { RecordedCallJson } from '../../../src/cli/replay/source.js';

describe('replay diff', () => {
  it('prints removed lines before added ones, with hunk headers and 3 lines of context', () => {
    const before = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i'].join('\n');
    const after = ['a', 'b', 'c', 'd', 'E', 'f', 'g', 'h', 'i'].join('\n');
    expect(unifiedDiff(before, after, ['old', 'new'])).toBe(['--- old', '+++ new', '@@ -2,7 +2,7 @@', ' b', ' c', ' d', '-e', '+E', ' f', ' g', ' h'].join('\n'));
  });

  it('splits distant changes into separate hunks', () => {
    const lines = Array.from({ length: 30 }, (_, i) => `line ${i}`);
    const changed = lines.map((l, i) => (i === 2 || i === 25 ? `${l}!` : l));
    const diff = unifiedDiff(lines.join('\n'), changed.join('\n'), ['a', 'b']);
    expect(diff.match(/^@@/gm)).toHaveLength(2);
    expect(diff).toContain('@@ -23,7 +23,7 @@');
  });

  it('answers an empty diff for equal texts', () => {
    expect(unifiedDiff('x\ny', 'x\ny', ['a', 'b'])).toBe('');
  });

  it('spreads multi-line JSON strings over lines so a diff points at the changed line', () => {
    const shown = forDiff(JSON.stringify({ page: 1, text: 'first\nsecond' }));
    expect(shown).toBe(['{', '  "page": 1,', '  "text": |', '    first', '    second', '}'].join('\n'));
  });

  it('normalizes ISO times, uuids and trace ids by default, and user patterns on request', () => {
    const text = 'at 2026-12-02T09:55:33.123Z for trace_4b1e2f00-1111-4222-8333-944445555666 req 0f8fad5b-d9cb-469f-a165-70867728950e n=42';
    expect(normalize(text, DEFAULT_NORMALIZERS)).toBe('at <time> for <trace> req <uuid> n=42');
    expect(normalize(text, [...DEFAULT_NORMALIZERS, userNormalizer('n=\\d+')])).toBe('at <time> for <trace> req <uuid> <norm>');
  });
});

function call(seq: number, start: number, end: number | null): RecordedCallJson {
  const iso = (ms: number) => new Date(1_800_000_000_000 + ms).toISOString();
  return { seq, call_id: `c${seq}`, tool: 't', arguments: '{}', output: end === null ? null : 'o', status: end === null ? 'interrupted' : 'ok', started_at: iso(start), finished_at: end === null ? null : iso(end), duration_ms: null };
}

describe('replay plan', () => {
  it('sends calls with overlapping recorded intervals together and the others in order', () => {
    const plan = planReplay([call(3, 20, 30), call(1, 0, 10), call(2, 5, 12), call(4, 30, 40)]);
    expect(plan.groups.map((g) => g.map((c) => c.seq))).toEqual([[1, 2], [3], [4]]);
  });

  it('chains overlaps: a call overlapping any call of the group joins it', () => {
    const plan = planReplay([call(1, 0, 10), call(2, 9, 50), call(3, 40, 60)]);
    expect(plan.groups.map((g) => g.map((c) => c.seq))).toEqual([[1, 2, 3]]);
  });

  it('skips calls that never finished, since there is nothing to compare', () => {
    const plan = planReplay([call(1, 0, 10), call(2, 10, null)]);
    expect(plan.skipped.map((c) => c.seq)).toEqual([2]);
    expect(plan.groups).toHaveLength(1);
  });
});
