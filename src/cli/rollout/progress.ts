// Progress on stderr: a redrawn bar on a terminal, one plain line per rollout otherwise (CI logs,
// pipes), so stdout stays free for the summary.
import type { RolloutResult } from './run.js';

export class Progress {
  private finished = 0;
  private discarded = 0;
  private scoreSum = 0;
  private scored = 0;
  private readonly tty: boolean;

  constructor(
    private readonly total: number,
    private readonly out: NodeJS.WriteStream = process.stderr,
  ) {
    this.tty = out.isTTY === true;
  }

  done(r: RolloutResult): void {
    this.finished++;
    if (r.discarded) this.discarded++;
    if (r.score !== null) {
      this.scoreSum += r.score;
      this.scored++;
    }
    if (this.tty) {
      this.out.write(`\r${this.bar()}`);
      if (this.finished === this.total) this.out.write('\n');
      return;
    }
    const what = r.discarded ? `discarded (${r.error ?? ''})` : `score=${r.score}`;
    this.out.write(
      `[${this.finished}/${this.total}] row=${r.row} try=${r.try} ${r.trace_id} ${what} calls=${r.tool_calls} steps=${r.steps} ${r.latency_ms}ms\n`,
    );
  }

  private bar(): string {
    const width = 30;
    const filled = this.total === 0 ? width : Math.round((this.finished / this.total) * width);
    const mean = this.scored > 0 ? (this.scoreSum / this.scored).toFixed(3) : '-';
    return `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${this.finished}/${this.total} mean=${mean} discarded=${this.discarded}`;
  }
}
