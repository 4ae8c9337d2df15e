// A cap on live sandboxes with a bounded FIFO of waiters. A burst of new rollouts waits for a slot;
// only a wait longer than `timeoutMs` fails (RFT_ERR_SANDBOX_QUEUE_TIMEOUT), and only a full queue
// fails at once (RFT_ERR_SANDBOX_UNAVAILABLE). Both are 503s: the trainer retries them. Whenever a
// caller starts waiting, `onWait` is told (the manager then reclaims a graded rollout's idle sandbox,
// whose release hands its slot to the oldest waiter).
import { errors } from '../../errors.js';

interface Waiter {
  grant(): void;
  fail(e: unknown): void;
}

export class Admission {
  private held = 0;
  private readonly waiters: Waiter[] = [];
  private closed = false;

  constructor(
    readonly cap: number,
    private readonly maxQueue: number,
    private readonly timeoutMs: number,
    private readonly onWait?: () => void,
  ) {}

  get queued(): number {
    return this.waiters.length;
  }

  get inUse(): number {
    return this.held;
  }

  /** Resolves when a slot is ours; the caller must release() it exactly once. */
  acquire(signal?: AbortSignal): Promise<void> {
    if (this.closed) return Promise.reject(errors.sandboxClosed());
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.held < this.cap) {
      this.held++;
      return Promise.resolve();
    }
    if (this.waiters.length >= this.maxQueue) {
      return Promise.reject(errors.sandboxUnavailable(`all ${this.cap} sandboxes are in use and ${this.maxQueue} requests already wait`));
    }
    return new Promise<void>((resolve, reject) => {
      const leave = (): void => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        const i = this.waiters.indexOf(waiter);
        if (i >= 0) this.waiters.splice(i, 1);
      };
      const waiter: Waiter = {
        grant: () => {
          leave();
          resolve();
        },
        fail: (e) => {
          leave();
          reject(e);
        },
      };
      const timer = setTimeout(() => waiter.fail(errors.sandboxQueueTimeout(this.timeoutMs)), this.timeoutMs);
      const onAbort = (): void => waiter.fail(signal?.reason);
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiters.push(waiter);
      this.onWait?.();
    });
  }

  /** Hands the slot to the oldest waiter, or frees it. */
  release(): void {
    const next = this.waiters[0];
    if (next) next.grant();
    else this.held = Math.max(0, this.held - 1);
  }

  close(): void {
    this.closed = true;
    for (const w of [...this.waiters]) w.fail(errors.sandboxClosed());
  }
}
