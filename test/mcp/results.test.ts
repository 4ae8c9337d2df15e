// MCP tool results -> the output string the model reads.
import { describe, expect, it } from 'vitest';
import { resultText } from '../../src/mcp/results.js';

describe('resultText', () => {
  it('joins text parts with newlines', () => {
    expect(resultText({ content: [{ type: 'text', text: 'a' }, { type: 'text', text: 'b' }] })).toEqual({ text: 'a\nb', isError: false });
  });

  it('gives structured content as JSON when no text part carries it, and the text alone when one does', () => {
    expect(resultText({ content: [], structuredContent: { t: 33 } }).text).toBe('{"t":33}');
    expect(resultText({ content: [{ type: 'text', text: 'It is 33 C' }], structuredContent: { t: 33 } }).text).toBe('It is 33 C');
  });

  it('describes what a text output cannot hold', () => {
    const r = resultText({
      content: [
        { type: 'image', data: Buffer.alloc(300).toString('base64'), mimeType: 'image/png' },
        { type: 'audio', data: Buffer.alloc(10).toString('base64'), mimeType: 'audio/wav' },
        { type: 'resource_link', uri: 'file:///a.txt', name: 'a.txt', mimeType: 'text/plain' },
        { type: 'resource', resource: { uri: 'file:///b.txt', text: 'inside b' } },
        { type: 'resource', resource: { uri: 'file:///c.bin', mimeType: 'application/octet-stream', blob: Buffer.alloc(7).toString('base64') } },
      ],
    });
    expect(r.text.split('\n')).toEqual([
      '[image: image/png, 300 bytes]',
      '[audio: audio/wav, 10 bytes]',
      '[resource link: a.txt file:///a.txt (text/plain)]',
      '[resource file:///b.txt]',
      'inside b',
      '[resource: file:///c.bin, application/octet-stream, 7 bytes]',
    ]);
  });

  it('carries the error flag', () => {
    expect(resultText({ content: [{ type: 'text', text: 'no such file' }], isError: true })).toEqual({ text: 'no such file', isError: true });
  });
});
