import { describe, expect, it } from 'vitest';
import { functionCallSchema, parseFunctionCall } from '../../src/protocol/wire.js';

const ok = { type: 'function_call', id: 'fc_1', call_id: 'call_1', name: 'echo', arguments: '{"a":1}', trace_id: 'trace_1', item: { q: 1 } };

// Bodies around every rule of functionCallSchema: the hot path's check must agree with it on each.
const cases: [string, unknown][] = [
  ['a full call', ok],
  ['no type, id, name, arguments or item', { call_id: 'c', trace_id: 't' }],
  ['object arguments', { ...ok, arguments: { a: 1 } }],
  ['array arguments', { ...ok, arguments: [1] }],
  ['null arguments', { ...ok, arguments: null }],
  ['numeric arguments', { ...ok, arguments: 3 }],
  ['null item', { ...ok, item: null }],
  ['array item', { ...ok, item: [] }],
  ['string item', { ...ok, item: 'row' }],
  ['other type', { ...ok, type: 'message' }],
  ['null type', { ...ok, type: null }],
  ['empty call_id', { ...ok, call_id: '' }],
  ['call_id of 200', { ...ok, call_id: 'c'.repeat(200) }],
  ['call_id of 201', { ...ok, call_id: 'c'.repeat(201) }],
  ['numeric call_id', { ...ok, call_id: 7 }],
  ['missing call_id', { ...ok, call_id: undefined }],
  ['empty id', { ...ok, id: '' }],
  ['id of 201', { ...ok, id: 'i'.repeat(201) }],
  ['empty name', { ...ok, name: '' }],
  ['name of 129', { ...ok, name: 'n'.repeat(129) }],
  ['empty trace_id', { ...ok, trace_id: '' }],
  ['trace_id of 201', { ...ok, trace_id: 't'.repeat(201) }],
  ['missing trace_id', { call_id: 'c' }],
  ['extra keys', { ...ok, extra: { deep: true } }],
  ['an array', [ok]],
  ['null', null],
  ['a string', 'call'],
];

describe('parseFunctionCall', () => {
  it.each(cases)('agrees with functionCallSchema on %s', (_label, body) => {
    const fast = parseFunctionCall(body);
    const schema = functionCallSchema.safeParse(body);
    expect(fast.success).toBe(schema.success);
    if (fast.success && schema.success) expect(fast.data).toEqual(schema.data);
  });

  it('returns the body itself on the fast path (no copy of a large item)', () => {
    const r = parseFunctionCall(ok);
    expect(r.success && r.data).toBe(ok);
  });

  it('words a refusal with the schema issues', () => {
    const r = parseFunctionCall({ ...ok, call_id: '' });
    expect(r.success).toBe(false);
    if (!r.success) expect(r.error.issues[0]?.path).toEqual(['call_id']);
  });
});
