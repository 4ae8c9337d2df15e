// What the model reads: outputs capped with a visible marker, validation issues in plain words.
import type { z } from 'zod';

export function truncateOutput(output: string, maxBytes: number): { output: string; truncated: boolean; originalBytes: number } {
  const originalBytes = Buffer.byteLength(output, 'utf8');
  if (originalBytes <= maxBytes) return { output, truncated: false, originalBytes };
  const marker = `\n[output truncated: ${originalBytes} bytes, showing the first ${maxBytes}]`;
  return { output: headBytes(output, Math.max(0, maxBytes - Buffer.byteLength(marker))) + marker, truncated: true, originalBytes };
}

/**
 * An output whose source was cut before it got here (a bridged server's answer past its read
 * limit): its head, at most `maxBytes` with the marker, which states the size the whole had.
 */
export function cutOutput(head: string, maxBytes: number, totalBytes: number): string {
  const marker = (shown: number) => `\n[output truncated: ${totalBytes} bytes, showing the first ${shown}]`;
  const body = headBytes(head, Math.max(0, maxBytes - Buffer.byteLength(marker(maxBytes))));
  return body + marker(Buffer.byteLength(body, 'utf8'));
}

/** The first `maxBytes` of `text`, cut on a character boundary (a partial UTF-8 sequence would decode to U+FFFD). */
function headBytes(text: string, maxBytes: number): string {
  if (Buffer.byteLength(text, 'utf8') <= maxBytes) return text;
  const head = Buffer.from(text, 'utf8').subarray(0, maxBytes).toString('utf8');
  return head.endsWith('\uFFFD') ? head.slice(0, -1) : head;
}

export function formatZodIssues(issues: readonly z.core.$ZodIssue[]): string {
  return issues
    .slice(0, 10)
    .map((i) => `${i.path.length ? i.path.join('.') : '(arguments)'}: ${i.message}`)
    .join('; ');
}
