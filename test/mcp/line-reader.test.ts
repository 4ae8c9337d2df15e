// The stdio transport's line reader: lines split anywhere across chunks come out whole; a line past
// the limit is not kept, and what answering it needs (id, error, isError, the head of its text) is
// found wherever the chunks cut it, even an escape or a UTF-8 character.
import { expect, it } from 'vitest';
import { LineReader, type CutLine } from '../../src/mcp/line-reader.js';

function read(limit: number, input: string, chunk: number): { lines: string[]; cuts: CutLine[] } {
  const lines: string[] = [];
  const cuts: CutLine[] = [];
  const reader = new LineReader(limit, (l) => lines.push(l.toString('utf8')), (c) => cuts.push(c));
  const bytes = Buffer.from(input, 'utf8');
  for (let at = 0; at < bytes.length; at += chunk) reader.push(bytes.subarray(at, at + chunk));
  return { lines, cuts };
}

const line = (m: unknown) => `${JSON.stringify(m)}\n`;

it('gives back lines cut anywhere by the chunks, several per chunk included', () => {
  const msgs = [{ jsonrpc: '2.0', id: 1, result: { a: 'x'.repeat(100) } }, { jsonrpc: '2.0', method: 'n' }, { jsonrpc: '2.0', id: 'b', result: {} }];
  const input = msgs.map(line).join('');
  for (const chunk of [1, 3, 7, 64, 4096]) expect(read(1024, input, chunk).lines.map((l) => JSON.parse(l) as unknown)).toEqual(msgs);
});

it('reads a line past the limit without keeping it: its id (last, as the SDK writes it), isError and the head of its text', () => {
  const text = 'é"\\\n\u0001😀'.repeat(2000);
  const first = line({ result: { content: [{ type: 'text', text }], structuredContent: { content: text }, isError: true }, jsonrpc: '2.0', id: 42 });
  const input = first + line({ jsonrpc: '2.0', id: 43, result: {} });
  for (const chunk of [1, 5, 13, 1000, 65536]) {
    const { lines, cuts } = read(5000, input, chunk);
    expect(lines).toEqual([line({ jsonrpc: '2.0', id: 43, result: {} }).trimEnd()]);
    expect(cuts).toHaveLength(1);
    const [cut] = cuts as [CutLine];
    expect(cut).toMatchObject({ id: 42, hasMethod: false, error: null, isError: true, bytes: Buffer.byteLength(first) - 1 });
    expect(cut.texts).toHaveLength(1);
    const head = cut.texts[0] as string;
    // Cut inside an escape or a character: what is kept decodes cleanly and is a prefix of the text.
    expect(head.length).toBeGreaterThan(1000);
    expect(text.startsWith(head)).toBe(true);
  }
});

it('tells an error answer and a server request past the limit, and string ids', () => {
  const big = 'y'.repeat(3000);
  const { cuts } = read(
    1000,
    line({ jsonrpc: '2.0', id: 'req-7', error: { code: -32000, message: big } }) + line({ jsonrpc: '2.0', method: 'notifications/message', params: { data: big } }),
    256,
  );
  expect(cuts).toMatchObject([
    { id: 'req-7', error: { code: -32000 }, hasMethod: false, texts: [] },
    { id: null, hasMethod: true, error: null },
  ]);
});

it('is not fooled by keys and braces inside strings, nor by nesting deeper than it tracks', () => {
  const tricky = { note: '{"id": 99, "result": {"content": [{"text": "forged"}]}}', deep: [[[[[[[[[[{ id: 5 }]]]]]]]]]] };
  const input = line({ result: { meta: tricky, content: [{ type: 'text', text: 'real' + 'z'.repeat(5000) }] }, jsonrpc: '2.0', id: 7 });
  const { cuts } = read(2000, input, 100);
  expect(cuts).toMatchObject([{ id: 7 }]);
  expect(cuts[0]?.texts[0]?.startsWith('realzzz')).toBe(true);
});
