// When commands ran in a container, as this replica saw them: the last few spans during which at
// least one ran. A container that stopped is the rollout's doing only if something ran in it then
// (DockerSandbox.endedByRollout): the rollout's commands and the grader's (a test the rollout's code
// takes part in) share one record per container.

/** Spans kept. */
const SPANS = 8;
/**
 * How long after a span's end a death still counts as its (the engine may stop the container a little
 * after the command that ended it returned). None before its start: the call that found the container
 * gone began after the death, and must not make it look like its own. (The engine's clock and the
 * server's are compared: one host's, or NTP's for a remote engine.)
 */
const AFTER_MS = 1_000;

export class BusySpans {
  private running = 0;
  /** [start, end or null while running] (ms since the epoch), newest last. */
  private readonly spans: [number, number | null][] = [];

  enter(): void {
    if (this.running++ === 0) {
      this.spans.push([Date.now(), null]);
      if (this.spans.length > SPANS) this.spans.shift();
    }
  }

  leave(): void {
    if (--this.running === 0) {
      const span = this.spans[this.spans.length - 1];
      if (span) span[1] = Date.now();
    }
  }

  /** Whether a command was running at time t (ms). */
  at(t: number): boolean {
    return this.spans.some(([from, to]) => t >= from && (to === null || t <= to + AFTER_MS));
  }
}
