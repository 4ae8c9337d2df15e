// Server-sent events as the ORS client reads them (openrewardstandard/python-sdk
// src/ors/client/_http.py `_parse_sse_events`): `event:` and `data:` lines, a blank line ends an
// event, lines starting with ':' are skipped (pings). Its parser strips the leading whitespace of
// every data line, so a result is never cut into chunks (a chunk starting with a space would lose
// it): one `end` event carries the whole compact JSON, which has no newline in it.
import type { FastifyReply } from 'fastify';

export class EventStream {
  private readonly raw: FastifyReply['raw'];
  private ping: NodeJS.Timeout | undefined;

  constructor(reply: FastifyReply) {
    reply.hijack();
    this.raw = reply.raw;
    this.raw.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      'x-accel-buffering': 'no',
    });
    this.raw.once('close', () => this.stopPings());
  }

  /** The client went away (its reconnect gets the result by task_id). */
  get closed(): boolean {
    return this.raw.destroyed || this.raw.writableEnded;
  }

  event(name: string, data: string): void {
    if (!this.closed) this.raw.write(`event: ${name}\ndata: ${data}\n\n`);
  }

  /** A comment line every `ms` until the stream ends: the client gives up after 30 s without a byte. */
  pings(ms: number): void {
    this.ping = setInterval(() => {
      if (!this.closed) this.raw.write(': ping\n\n');
    }, ms);
  }

  private stopPings(): void {
    if (this.ping) clearInterval(this.ping);
    this.ping = undefined;
  }

  /** The `end` event and the response's end in one write (the last chunk and the terminator together). */
  end(data: string): void {
    this.stopPings();
    if (!this.closed) this.raw.end(`event: end\ndata: ${data}\n\n`);
  }

  /** Ends the stream without an `end` event: the client reconnects with the task_id (a failure of ours). */
  abort(): void {
    this.stopPings();
    this.raw.destroy();
  }
}
