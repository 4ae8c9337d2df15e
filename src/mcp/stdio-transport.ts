// The MCP stdio transport over a SandboxProcess: newline-delimited JSON-RPC on stdin/stdout, stderr
// kept (its tail) for error messages. The same transport serves a server inside a rollout's
// sandbox and one on the host, since both are a SandboxProcess. Messages are read up to a limit
// (line-reader.ts); an answer past it is not kept but answered here from its head (oversizeAnswer).
import { deserializeMessage, serializeMessage, type JSONRPCMessage, type Transport } from '@modelcontextprotocol/client';
import type { ProcessExit, SandboxProcess } from '../sandbox/types.js';
import { LineReader, type CutLine } from './line-reader.js';

const STDERR_TAIL_BYTES = 4096;

/** `_meta` key of a result this transport cut: `{ bytes, limit }` (see bridge.ts, which shows the cut). */
export const CUT_META = 'rft-endpoints/cut';

/**
 * What the client receives for a line past the read limit. An answer becomes a result holding the
 * head of its text parts (or an error response, for an error), marked with CUT_META; a request or
 * notification of the server, or a line with no id, is dropped (nothing waits for it here).
 */
export function oversizeAnswer(cut: CutLine, limit: number): JSONRPCMessage | null {
  if (cut.hasMethod || cut.id === null) return null;
  if (cut.error) {
    const message = `the server's error answer was ${cut.bytes} bytes, more than the ${limit} it may send; it was not read`;
    return { jsonrpc: '2.0', id: cut.id, error: { code: cut.error.code ?? -32603, message } };
  }
  const content = [{ type: 'text' as const, text: cut.texts.join('\n') }];
  return { jsonrpc: '2.0', id: cut.id, result: { content, ...(cut.isError ? { isError: true } : {}), _meta: { [CUT_META]: { bytes: cut.bytes, limit } } } };
}

export class ProcessTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: <T extends JSONRPCMessage>(message: T) => void;
  private readonly reader: LineReader;
  private stderrTail = '';
  private closed = false;
  /** How the process ended, once it has. */
  exit: (ProcessExit & { lost?: Error }) | null = null;

  /** `readLimit`: the largest message kept whole, in bytes (bridge.ts derives it from the tool's output cap). */
  constructor(
    readonly proc: SandboxProcess,
    readLimit: number,
  ) {
    this.reader = new LineReader(
      readLimit,
      (line) => this.deliver(line),
      (cut) => {
        const m = oversizeAnswer(cut, readLimit);
        if (m) this.onmessage?.(m);
      },
    );
  }

  async start(): Promise<void> {
    this.proc.stdout.on('data', (chunk: Buffer) => {
      if (this.closed) return;
      try {
        this.reader.push(chunk);
      } catch (e) {
        // A line that is JSON but not JSON-RPC: the server is not speaking MCP.
        this.onerror?.(e as Error);
        void this.close();
      }
    });
    this.proc.stdout.on('error', () => {});
    this.proc.stderr.on('data', (chunk: Buffer) => {
      this.stderrTail = (this.stderrTail + chunk.subarray(-STDERR_TAIL_BYTES).toString('utf8')).slice(-STDERR_TAIL_BYTES);
    });
    this.proc.stderr.on('error', () => {});
    // Its end is known before the transport closes: the call waiting on it reads why (bridge.ts).
    void this.proc.exited.then(async (exit) => {
      const lost = await this.proc.endedBySandbox?.().catch(() => undefined);
      this.exit = { ...exit, ...(lost ? { lost } : {}) };
      this.finish();
    });
  }

  private deliver(line: Buffer): void {
    if (this.closed) return;
    let message: JSONRPCMessage;
    try {
      message = deserializeMessage(line.toString('utf8'));
    } catch (e) {
      if (e instanceof SyntaxError) return; // not JSON (a stray print): skipped, as the SDK's ReadBuffer does
      throw e;
    }
    this.onmessage?.(message);
  }

  /** The last few KB the server wrote to stderr. */
  stderr(): string {
    return this.stderrTail.trim();
  }

  send(message: JSONRPCMessage): Promise<void> {
    if (this.closed) return Promise.reject(new Error('the MCP server is not running'));
    return new Promise((resolve, reject) => {
      this.proc.stdin.write(serializeMessage(message), (err) => (err ? reject(err) : resolve()));
    });
  }

  /** Stops the server: its process tree is killed (a per-rollout server keeps nothing worth a graceful stop). */
  async close(): Promise<void> {
    await this.proc.kill();
    this.finish();
  }

  private finish(): void {
    if (this.closed) return;
    this.closed = true;
    this.reader.clear();
    this.onclose?.();
  }
}
