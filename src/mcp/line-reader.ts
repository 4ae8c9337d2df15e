// Newline-delimited messages read from a stream with work linear in the bytes read: each chunk is
// searched once for newlines and a line is joined once, when it ends (the SDK's ReadBuffer copied
// and rescanned everything buffered on every chunk: quadratic, seconds of event loop for a 20 MB
// answer). A line is kept up to `limit` bytes; past that its bytes are only scanned as they stream
// (not kept) for what is needed to answer it: its JSON-RPC id, whether it is an error, and the head
// of its result's text parts, which the kept head holds.

/** What is known of a line past the limit once it ends. */
export interface CutLine {
  /** Its whole size. */
  bytes: number;
  /** The top-level `id` (a response's), when it was a number or a short string. */
  id: string | number | null;
  /** It has a top-level `method`: a request or notification of the server, not an answer. */
  hasMethod: boolean;
  /** It has a top-level `error` (an error response), and its `code` when it was a number. */
  error: { code: number | null } | null;
  /** `result.isError` was `true`. */
  isError: boolean;
  /** The result's text parts (`result.content[i].text`) as far as the kept head holds them. */
  texts: string[];
}

const MAX_DEPTH_TRACKED = 8;
const MAX_CAPTURE = 256;
const MAX_TEXT_PARTS = 64;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

interface Frame {
  array: boolean;
  path: string;
  key: string | null;
  expectKey: boolean;
}

type StringRole = 'key' | 'id' | 'text' | 'skip';

/** The JSON structure of one line, followed byte by byte without keeping the bytes (see CutLine). */
class Scanner {
  private pos = 0;
  private readonly stack: Frame[] = [];
  /** Containers open below the tracked depth (only counted). */
  private deep = 0;
  private inString = false;
  private escape = false;
  private role: StringRole = 'skip';
  private captured = '';
  private scalarPath: string | null = null;
  private scalar = '';
  private readonly found: Omit<CutLine, 'bytes' | 'texts'> = { id: null, hasMethod: false, error: null, isError: false };
  private errorCode: number | null = null;
  /** Where each text part's characters start and end (past the closing quote: null) in the line. */
  readonly textSpans: { start: number; end: number | null }[] = [];

  push(buf: Buffer): void {
    let i = 0;
    while (i < buf.length) {
      if (this.inString) {
        i = this.stringPart(buf, i);
        continue;
      }
      this.structural(buf[i] as number, this.pos + i);
      i++;
    }
    this.pos += buf.length;
  }

  /** Consumes string bytes from `i`; returns where to go on. Runs of plain characters are skipped natively. */
  private stringPart(buf: Buffer, i: number): number {
    if (this.escape) {
      this.escape = false;
      this.capture(buf, i, i + 1);
      return i + 1;
    }
    const q = buf.indexOf(QUOTE, i);
    const b = buf.indexOf(BACKSLASH, i);
    const stop = q === -1 ? b : b === -1 ? q : Math.min(q, b);
    if (stop === -1) {
      this.capture(buf, i, buf.length);
      return buf.length;
    }
    this.capture(buf, i, stop);
    if (stop === b) {
      this.escape = true;
      return stop + 1;
    }
    this.endString(this.pos + stop);
    return stop + 1;
  }

  private capture(buf: Buffer, from: number, to: number): void {
    if ((this.role === 'key' || this.role === 'id') && this.captured.length < MAX_CAPTURE) this.captured += buf.toString('latin1', from, Math.min(to, from + MAX_CAPTURE));
  }

  private structural(c: number, at: number): void {
    switch (c) {
      case 0x20:
      case 0x09:
      case 0x0a:
      case 0x0d:
      case 0x3a: // ':'
        this.endScalar();
        return;
      case 0x2c: {
        // ','
        this.endScalar();
        const top = this.top();
        if (top && !top.array) top.expectKey = true;
        return;
      }
      case 0x7b: // '{'
      case 0x5b: {
        // '['
        const path = this.valuePath();
        if (this.deep > 0 || this.stack.length >= MAX_DEPTH_TRACKED) this.deep++;
        else this.stack.push({ array: c === 0x5b, path, key: null, expectKey: c === 0x7b });
        return;
      }
      case 0x7d: // '}'
      case 0x5d: // ']'
        this.endScalar();
        if (this.deep > 0) this.deep--;
        else this.stack.pop();
        return;
      case QUOTE: {
        const top = this.top();
        if (this.deep === 0 && top && !top.array && top.expectKey) {
          this.role = 'key';
        } else {
          const path = this.valuePath();
          this.role = path === 'id' ? 'id' : path === 'result/content/#/text' ? 'text' : 'skip';
          if (this.role === 'text' && this.textSpans.length < MAX_TEXT_PARTS) this.textSpans.push({ start: at + 1, end: null });
        }
        this.inString = true;
        this.captured = '';
        return;
      }
      default:
        // A number, true, false or null: kept only where it matters.
        if (this.scalarPath === null) this.scalarPath = this.valuePath();
        if (this.scalar.length < 32) this.scalar += String.fromCharCode(c);
    }
  }

  private endString(at: number): void {
    this.inString = false;
    const top = this.top();
    if (this.role === 'key' && top) {
      top.key = this.captured;
      top.expectKey = false;
    } else if (this.role === 'id') {
      this.found.id = this.captured;
    } else if (this.role === 'text') {
      const span = this.textSpans.at(-1);
      if (span && span.end === null) span.end = at;
    }
    this.role = 'skip';
  }

  private endScalar(): void {
    if (this.scalarPath === null) return;
    const [path, text] = [this.scalarPath, this.scalar];
    this.scalarPath = null;
    this.scalar = '';
    if (path === 'id' && /^-?\d+$/.test(text)) this.found.id = Number(text);
    else if (path === 'result/isError') this.found.isError = text === 'true';
    else if (path === 'error/code' && /^-?\d+$/.test(text)) this.errorCode = Number(text);
  }

  private top(): Frame | undefined {
    return this.deep > 0 ? undefined : this.stack.at(-1);
  }

  /** The path of the value starting now ('' the line's own, 'result/content/#' an element of result.content); its parent's keys noted. */
  private valuePath(): string {
    if (this.deep > 0) return '*';
    const top = this.stack.at(-1);
    if (!top) return '';
    const seg = top.array ? '#' : (top.key ?? '');
    if (this.stack.length === 1 && !top.array) {
      if (seg === 'method') this.found.hasMethod = true;
      if (seg === 'error') this.found.error = { code: null };
    }
    return top.path ? `${top.path}/${seg}` : seg;
  }

  result(): Omit<CutLine, 'bytes' | 'texts'> {
    this.endScalar();
    return { ...this.found, error: this.found.error ? { code: this.errorCode } : null };
  }
}

/** The characters of a JSON string from its kept bytes, cut anywhere: an incomplete escape or UTF-8 sequence at the cut is dropped. */
function decodeStringHead(bytes: Buffer, complete: boolean): string | null {
  let b = bytes;
  if (!complete) {
    const last = b.lastIndexOf(BACKSLASH);
    if (last !== -1 && last >= b.length - 6) {
      let run = 0;
      for (let k = last; k >= 0 && b[k] === BACKSLASH; k--) run++;
      const needs = b[last + 1] === 0x75 ? 6 : 2; // \uXXXX, else \n, \", ...
      if (run % 2 === 1 && last + needs > b.length) b = b.subarray(0, last);
    }
  }
  try {
    let s = JSON.parse(`"${b.toString('utf8')}"`) as string;
    if (!complete) s = s.replace(/\uFFFD$/, '').replace(/[\uD800-\uDBFF]$/, '');
    return s;
  } catch {
    return null;
  }
}

export class LineReader {
  private held: Buffer[] = [];
  private heldBytes = 0;
  private lineBytes = 0;
  private scanner: Scanner | null = null;

  constructor(
    private readonly limit: number,
    private readonly onLine: (line: Buffer) => void,
    private readonly onCut: (cut: CutLine) => void,
  ) {}

  push(chunk: Buffer): void {
    let at = 0;
    while (at < chunk.length) {
      const nl = chunk.indexOf(0x0a, at);
      this.take(chunk.subarray(at, nl === -1 ? chunk.length : nl));
      if (nl === -1) return;
      this.endLine();
      at = nl + 1;
    }
  }

  clear(): void {
    this.held = [];
    this.heldBytes = 0;
    this.lineBytes = 0;
    this.scanner = null;
  }

  private take(part: Buffer): void {
    if (part.length === 0) return;
    this.lineBytes += part.length;
    if (this.scanner) {
      this.scanner.push(part);
      return;
    }
    const room = this.limit - this.heldBytes;
    if (part.length <= room) {
      this.held.push(part);
      this.heldBytes += part.length;
      return;
    }
    // Past the limit: the head so far is scanned once, and from here on the line only streams through the scanner.
    this.scanner = new Scanner();
    for (const h of this.held) this.scanner.push(h);
    this.scanner.push(part);
    if (room > 0) this.held.push(part.subarray(0, room));
    this.heldBytes = this.limit;
  }

  private endLine(): void {
    const { held, heldBytes, scanner, lineBytes } = this;
    this.clear();
    if (scanner) {
      const head = Buffer.concat(held);
      const texts: string[] = [];
      for (const span of scanner.textSpans) {
        if (span.start >= head.length) break;
        const complete = span.end !== null && span.end <= head.length;
        const text = decodeStringHead(head.subarray(span.start, complete ? (span.end as number) : head.length), complete);
        if (text !== null) texts.push(text);
        if (!complete) break;
      }
      this.onCut({ ...scanner.result(), bytes: lineBytes, texts });
    } else if (held.length) {
      this.onLine(held.length === 1 ? (held[0] as Buffer) : Buffer.concat(held, heldBytes));
    }
  }
}
