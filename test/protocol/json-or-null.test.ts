// A sample's output_json from an answer's text: what JSON.parse gives where the text is JSON, else
// null (the parse is skipped where it cannot succeed; the result must be the same for every text).
import { expect, it } from 'vitest';
import { jsonOrNull } from '../../src/protocol/json-or-null.js';

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
