// Output shaping shared by the coding tools. Long tool outputs slow training and bury the part the
// model needs, so every output is capped, and a cap is always visible as a marker the model can read.

/** Keeps the head and the tail of `text` (the tail is where test summaries and tracebacks end). */
export function clip(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  const head = Math.floor(maxChars * 0.4);
  const tail = maxChars - head;
  const omitted = text.length - head - tail;
  return `${text.slice(0, head)}\n[... ${omitted} characters omitted ...]\n${text.slice(text.length - tail)}`;
}

/** Cuts one line (a grep match, a minified file) to `max` characters. */
export function clipLine(line: string, max: number): string {
  return line.length <= max ? line : `${line.slice(0, max)}[... ${line.length - max} more characters]`;
}

/** True when the bytes look binary (a NUL in the first 8 KB), like grep -I. */
export function looksBinary(data: Buffer): boolean {
  return data.subarray(0, 8192).includes(0);
}

export function humanBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}
