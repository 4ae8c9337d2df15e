// What the model reads: outputs capped with a visible marker, validation issues in plain words.
import type { z } from 'zod';

export function truncateOutput(output: string, maxBytes: number): { output: string; truncated: boolean; originalBytes: number } {
  const originalBytes = Buffer.byteLength(output, 'utf8');
  if (originalBytes <= maxBytes) return { output, truncated: false, originalBytes };
  const marker = `\n[output truncated: ${originalBytes} bytes, showing the first ${maxBytes}]`;
  const keep = Math.max(0, maxBytes - Buffer.byteLength(marker));
  // Cut on a character boundary: decoding a partial UTF-8 sequence would add U+FFFD.
  let head = Buffer.from(output, 'utf8').subarray(0, keep).toString('utf8');
  if (head.endsWith('\uFFFD')) head = head.slice(0, -1);
  return { output: head + marker, truncated: true, originalBytes };
}

export function formatZodIssues(issues: readonly z.core.$ZodIssue[]): string {
  return issues
    .slice(0, 10)
    .map((i) => `${i.path.length ? i.path.join('.') : '(arguments)'}: ${i.message}`)
    .join('; ');
}
