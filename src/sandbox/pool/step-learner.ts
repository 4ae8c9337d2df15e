// What a trainer's step looks like from the arrivals of new sandboxes: a step starts a burst of new
// rollouts at once, then the model thinks and no new rollout comes until the next step. Arrivals less
// than `gapMs` apart are one burst; the next step is expected to be as large as the largest of the
// last few bursts (a trainer repeats its batch; an outlier, such as an evaluation pass, is forgotten
// after HISTORY more bursts or the idle timeout, and never costs more than the pool's budget).
// Pure (the caller passes the time), so it is tested with a fake clock.

/** Bursts remembered: a one-off larger burst stops counting after this many more. */
const HISTORY = 3;

export class StepLearner {
  private readonly bursts: number[] = [];
  private current = 0;
  private last = -Infinity;

  constructor(
    /** Quiet time that ends a burst: longer than the gaps between a step's arrivals, shorter than a step's pause. */
    private readonly gapMs: number,
    /** Quiet time after which training is taken to have stopped. */
    private readonly idleMs: number,
  ) {}

  /** A new sandbox was asked for at `now` (ms); true when it starts a new burst (a step). */
  arrive(now: number): boolean {
    const starts = now - this.last >= this.gapMs;
    if (starts) this.closeBurst();
    this.current++;
    this.last = now;
    return starts;
  }

  /** Whether arrivals are still coming (a step is starting). */
  inBurst(now: number): boolean {
    return now - this.last < this.gapMs;
  }

  /** Whether no new sandbox came for the idle timeout (or none ever came). */
  idle(now: number): boolean {
    return now - this.last >= this.idleMs;
  }

  /** The next step's expected size: the largest recent burst (the one under way included). */
  predicted(): number {
    return Math.max(0, this.current, ...this.bursts);
  }

  private closeBurst(): void {
    if (this.current === 0) return;
    this.bursts.push(this.current);
    if (this.bursts.length > HISTORY) this.bursts.shift();
    this.current = 0;
  }
}
