// Keeps the first `cap` bytes of a stream. Past the cap the stream is destroyed, so the writer gets
// EPIPE/SIGPIPE like `cmd | head -c N`: a `yes` flood stops costing CPU instead of being drained.
import type { Readable } from 'node:stream';

export class CappedOutput {
  private readonly chunks: Buffer[] = [];
  private size = 0;
  truncated = false;

  constructor(
    stream: Readable | null,
    private readonly cap: number,
  ) {
    if (!stream) return;
    stream.on('data', (chunk: Buffer) => this.push(chunk, stream));
    stream.on('error', () => {});
  }

  private push(chunk: Buffer, stream: Readable): void {
    const room = this.cap - this.size;
    if (chunk.length <= room) {
      this.chunks.push(chunk);
      this.size += chunk.length;
      return;
    }
    if (room > 0) this.chunks.push(chunk.subarray(0, room));
    this.size = this.cap;
    this.truncated = true;
    stream.destroy();
  }

  text(): string {
    return Buffer.concat(this.chunks).toString('utf8');
  }
}
