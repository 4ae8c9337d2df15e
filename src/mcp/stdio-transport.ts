// The MCP stdio transport over a SandboxProcess: newline-delimited JSON-RPC on stdin/stdout, stderr
// kept (its tail) for error messages. The same transport serves a server inside a rollout's
// sandbox and one on the host, since both are a SandboxProcess.
import { ReadBuffer, serializeMessage, type JSONRPCMessage, type Transport } from '@modelcontextprotocol/client';
import type { SandboxProcess } from '../sandbox/types.js';

/** Largest message a server may send (a result past the output cap is cut later, not here). */
const MAX_MESSAGE_BYTES = 64 * 1024 * 1024;
const STDERR_TAIL_BYTES = 4096;

export class ProcessTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: <T extends JSONRPCMessage>(message: T) => void;
  private readonly buffer = new ReadBuffer({ maxBufferSize: MAX_MESSAGE_BYTES });
  private stderrTail = '';
  private closed = false;
  /** How the process ended, once it has. */
  exit: { exitCode: number | null; signal: string | null } | null = null;

  constructor(readonly proc: SandboxProcess) {}

  async start(): Promise<void> {
    this.proc.stdout.on('data', (chunk: Buffer) => {
      try {
        this.buffer.append(chunk);
        for (let m = this.buffer.readMessage(); m !== null; m = this.buffer.readMessage()) this.onmessage?.(m);
      } catch (e) {
        // A line that is not JSON-RPC, or a message past the size limit: the server is not speaking MCP.
        this.onerror?.(e as Error);
        void this.close();
      }
    });
    this.proc.stdout.on('error', () => {});
    this.proc.stderr.on('data', (chunk: Buffer) => {
      this.stderrTail = (this.stderrTail + chunk.toString('utf8')).slice(-STDERR_TAIL_BYTES);
    });
    this.proc.stderr.on('error', () => {});
    void this.proc.exited.then((exit) => {
      this.exit = exit;
      this.finish();
    });
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
    this.buffer.clear();
    this.onclose?.();
  }
}
