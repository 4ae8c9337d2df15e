// A cap on live sandboxes and a memory budget, with a bounded FIFO of waiters. A burst of new
// rollouts waits for a slot and for room in the budget; only a wait longer than `timeoutMs` fails
// (RFT_ERR_SANDBOX_QUEUE_TIMEOUT, or RFT_ERR_MEMORY_BUDGET when memory is what it waited for), and
// only a full queue fails at once (RFT_ERR_SANDBOX_UNAVAILABLE). All are 503s: the trainer retries
// them. Each grant holds a slot and the bytes it asked (a sandbox with what its rollout starts:
// memory.ts); the `fixed` bytes are held by what no session owns (shared MCP instances, the warm pool).
// Waiters are served in order: a big one at the head is not overtaken by small ones behind it.
// Whenever a caller starts waiting, `onWait` is told (the manager then reclaims a graded rollout's
// idle sandbox, whose release hands its slot to the oldest waiter).
import { errors } from '../../errors.js';

interface Waiter {
  bytes: number;
  grant(): void;
  fail(e: unknown): void;
}

const MB = 1024 * 1024;

export class Admission {
  private held = 0;
  private used = 0;
  private readonly waiters: Waiter[] = [];
  private closed = false;

  constructor(
    readonly cap: number,
    private readonly maxQueue: number,
    private readonly timeoutMs: number,
    private readonly onWait?: () => void,
    /** Bytes all grants and the fixed part may hold together (Infinity: no memory budget). */
    readonly budget = Infinity,
    /** Bytes held outside any grant now (shared MCP instances, the warm pool), as last measured. */
    private readonly fixed: () => number = () => 0,
  ) {}

  get queued(): number {
    return this.waiters.length;
  }

  get inUse(): number {
    return this.held;
  }

  /** Bytes held now: grants and the fixed part. */
  get memoryInUse(): number {
    return this.used + this.fixed();
  }

  /**
   * Bytes the waiters need beyond the budget (0 when a slot, not memory, is what they wait for): what
   * the warm pool gives back for them (the manager's shedPool).
   */
  shortfall(): number {
    if (this.waiters.length === 0 || this.budget === Infinity || this.held >= this.cap) return 0;
    const asked = this.waiters.reduce((sum, w) => sum + w.bytes, 0);
    return Math.max(0, this.used + this.fixed() + asked - this.budget);
  }

  /** Grants the oldest waiters that fit now (the fixed part shrank: the pool gave back its sandboxes). */
  recheck(): void {
    this.pump();
  }

  /** A grant fits: a slot is free, and its bytes fit in the budget (or nothing is granted: one bigger than the budget still runs alone). */
  private fits(bytes: number): boolean {
    return this.held < this.cap && (this.used + this.fixed() + bytes <= this.budget || this.held === 0);
  }

  /** Resolves when a slot and `bytes` are ours; the caller must release(bytes) exactly once. */
  acquire(signal?: AbortSignal, bytes = 0): Promise<void> {
    if (this.closed) return Promise.reject(errors.sandboxClosed());
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.waiters.length === 0 && this.fits(bytes)) {
      this.take(bytes);
      return Promise.resolve();
    }
    if (this.waiters.length >= this.maxQueue) {
      return Promise.reject(errors.sandboxUnavailable(`all ${this.cap} sandboxes or the ${Math.round(this.budget / MB)} MB memory budget are in use and ${this.maxQueue} requests already wait`));
    }
    return new Promise<void>((resolve, reject) => {
      const leave = (): void => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        const i = this.waiters.indexOf(waiter);
        if (i >= 0) this.waiters.splice(i, 1);
      };
      const waiter: Waiter = {
        bytes,
        grant: () => {
          leave();
          this.take(bytes);
          resolve();
        },
        fail: (e) => {
          leave();
          reject(e);
          this.pump(); // the head gone, those behind it may fit
        },
      };
      const timer = setTimeout(() => waiter.fail(this.timeoutError(bytes)), this.timeoutMs);
      const onAbort = (): void => waiter.fail(signal?.reason);
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiters.push(waiter);
      this.onWait?.();
    });
  }

  private take(bytes: number): void {
    this.held++;
    this.used += bytes;
  }

  /** Why a wait ended unserved: memory, when a slot was free but the bytes did not fit. */
  private timeoutError(bytes: number): Error {
    if (this.held < this.cap) return errors.memoryBudget(Math.ceil(bytes / MB), Math.round(this.memoryInUse / MB), Math.round(this.budget / MB), this.timeoutMs);
    return errors.sandboxQueueTimeout(this.timeoutMs);
  }

  /** Frees a slot and its bytes; the oldest waiters that now fit are granted. */
  release(bytes = 0): void {
    this.held = Math.max(0, this.held - 1);
    this.used = Math.max(0, this.used - bytes);
    this.pump();
  }

  private pump(): void {
    for (let next = this.waiters[0]; next && this.fits(next.bytes); next = this.waiters[0]) next.grant();
  }

  close(): void {
    this.closed = true;
    for (const w of [...this.waiters]) w.fail(errors.sandboxClosed());
  }
}
