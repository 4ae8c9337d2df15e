// A sample's output_json from an answer's text: what JSON.parse gives where the text is JSON, else
// null (the parse is skipped where it cannot succeed; the result must be the same for every text).
import { expect, it } from 'vitest';
import { answerJson, answerSample, jsonOrNull } from '../../src/protocol/json-or-null.js';

const parsedOrNull = (t: string): unknown => {
  try {
    return JSON.parse(t) as unknown;
  } catch {
    return null;
  }
};

it('gives what JSON.parse gives, null for a plain-text answer', () => {
  const answers = [
    '42', ' 42 ', '-1.5e3', 'about 42', 'Answer: 42', '', '   ', 'true', 'false', 'null', 'tru', 'nan', 'NaN', 'Infinity',
    '[1, 2]', ' \n{"a": 1}', '\t\r\n[]', '{bad', '"quoted"', "'single'", '\u00a0{"a":1}', '\ufeff{"a":1}', '+1', '.5', '0x10',
    '{"a": [1, {"b": null}]}', '42 is the answer', 'x{"a":1}',
  ];
  for (const a of answers) expect(jsonOrNull(a), JSON.stringify(a)).toEqual(parsedOrNull(a));
  // and for every one-character start (the skip decides on the first character after whitespace)
  for (let c = 0; c < 0x3000; c++) {
    const t = `${String.fromCharCode(c)}1`;
    expect(jsonOrNull(t), JSON.stringify(t)).toEqual(parsedOrNull(t));
  }
});

it('answerJson: null past the depth and size caps (graded as the text, as /graders cuts a deep output_json), else jsonOrNull', () => {
  const limits = { maxBytes: 1_000_000, maxDepth: 64 };
  for (const depth of [63, 64]) expect(answerJson('['.repeat(depth) + ']'.repeat(depth), limits)).not.toBeNull();
  for (const depth of [65, 2_000, 200_000]) expect(answerJson('['.repeat(depth) + ']'.repeat(depth), limits)).toBeNull();
  // Brackets inside strings are not levels.
  expect(answerJson(JSON.stringify({ a: '['.repeat(100) }), limits)).toEqual({ a: '['.repeat(100) });
  expect(answerJson(`"${'é'.repeat(10)}"`, { maxBytes: 22, maxDepth: 64 })).toBe('é'.repeat(10));
  expect(answerJson(`"${'é'.repeat(10)}"`, { maxBytes: 21, maxDepth: 64 })).toBeNull();
  expect(answerSample('{"answer": "4.2"}', limits)).toEqual({ output_text: '{"answer": "4.2"}', output_json: { answer: '4.2' }, output_tools: [], choices: [] });
  expect(answerSample('Answer: 4.2', limits).output_json).toBeNull();
});
