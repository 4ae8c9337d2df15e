// Splits a rollout's wall time into the emulator's own work and time spent waiting on the server or
// the model, by taking timestamps around every await on them. Synchronous stretches of one rollout
// cannot interleave with another's, so the sum stays honest under concurrency. Work done while
// another wait of the same rollout is pending (parallel tool calls) counts as waiting: a slight
// undercount, on the side of flattering the emulator by microseconds, not the server.

export class Stopwatch {
  private ownMs = 0;
  private waitMs = 0;
  private segmentStart = performance.now();
  private waitStart = 0;
  private depth = 0;

  /** Awaits `p`, counting the time until it settles as waiting; nested waits count once. */
  async wait<T>(p: Promise<T>): Promise<T> {
    if (this.depth++ === 0) {
      this.waitStart = performance.now();
      this.ownMs += this.waitStart - this.segmentStart;
    }
    try {
      return await p;
    } finally {
      if (--this.depth === 0) {
        const now = performance.now();
        this.waitMs += now - this.waitStart;
        this.segmentStart = now;
      }
    }
  }

  /** Own and waiting time so far (closes the current own segment). */
  totals(): { ownMs: number; waitMs: number } {
    const now = performance.now();
    if (this.depth === 0) {
      this.ownMs += now - this.segmentStart;
      this.segmentStart = now;
    }
    return { ownMs: this.ownMs, waitMs: this.waitMs };
  }
}
