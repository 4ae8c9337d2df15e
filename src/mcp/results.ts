// MCP tool results -> the `output` string the model reads (and back, for serving): text parts
// joined, structured content as JSON (when no text part carries it), other content
// described in a line, since the trainer's output is text only.
import type { CallToolResult } from '@modelcontextprotocol/client';

type Content = CallToolResult['content'][number];

function base64Bytes(data: string): number {
  const pad = data.endsWith('==') ? 2 : data.endsWith('=') ? 1 : 0;
  return Math.max(0, Math.floor((data.length * 3) / 4) - pad);
}

function describe(c: Content): string {
  switch (c.type) {
    case 'text':
      return c.text;
    case 'image':
    case 'audio':
      return `[${c.type}: ${c.mimeType}, ${base64Bytes(c.data)} bytes]`;
    case 'resource_link':
      return `[resource link: ${c.name} ${c.uri}${c.mimeType ? ` (${c.mimeType})` : ''}${c.description ? ` - ${c.description}` : ''}]`;
    case 'resource': {
      const r = c.resource;
      if ('text' in r && typeof r.text === 'string') return `[resource ${r.uri}]\n${r.text}`;
      const blob = 'blob' in r && typeof r.blob === 'string' ? r.blob : '';
      return `[resource: ${r.uri}${r.mimeType ? `, ${r.mimeType}` : ''}, ${base64Bytes(blob)} bytes]`;
    }
    default:
      return `[${(c as { type?: string }).type ?? 'unknown'} content]`;
  }
}

export interface ResultText {
  text: string;
  isError: boolean;
}

export function resultText(r: CallToolResult): ResultText {
  const content = r.content ?? [];
  const parts = content.map(describe);
  // Servers are asked to send structured content serialized in a text part too: the text is what
  // a model reads, so the JSON is added only when there is no text at all.
  if (r.structuredContent !== undefined && !content.some((c) => c.type === 'text')) parts.push(JSON.stringify(r.structuredContent));
  return { text: parts.join('\n'), isError: r.isError === true };
}
