// Moves SQLite's WAL checkpoints (page copies and fsyncs of the database file) off the event loop:
// a worker thread with its own connection runs PASSIVE checkpoints, which never block the writer.
//
// The WAL starts over from its beginning only when a write transaction begins with every frame
// already copied back. Under sustained writes a pass rarely ends before the next commit, so while
// the WAL is long, passes follow each other closely; if that does not catch up within a few
// passes, the checkpointer asks the writer to hold its commits for one short pass (the tail
// left by the earlier passes), after which the next commit starts the WAL over.
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import { stopWorker } from './stop-worker.js';

// Plain CommonJS so the worker needs no TypeScript loader (tsx, vitest) to start.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
let db;
let stopped = false;
try {
  db = new Database(workerData.path, { fileMustExist: true });
  db.pragma('busy_timeout = 1000');
} catch (e) {
  // The store was closed (and its directory removed) before this thread started: nothing to do.
  stopped = true;
}
let longPasses = 0;
let waitingForPause = false;

function pass() {
  try {
    return db.pragma('wal_checkpoint(PASSIVE)')[0];
  } catch (e) {
    parentPort.postMessage({ error: String((e && e.message) || e) });
    return { log: 0, checkpointed: 0 };
  }
}

function tick() {
  if (stopped || waitingForPause) return;
  const r = pass();
  const long = r.log >= workerData.longWalFrames;
  longPasses = long ? longPasses + 1 : 0;
  if (long && longPasses >= workerData.passesBeforePause && workerData.canPause) {
    waitingForPause = true;
    parentPort.postMessage('pause');
    return;
  }
  setTimeout(tick, long ? workerData.catchUpMs : workerData.intervalMs);
}

parentPort.on('message', (m) => {
  if (m === 'paused') {
    // No commit can happen now: this pass copies everything, and the next commit starts the WAL over.
    pass();
    longPasses = 0;
    waitingForPause = false;
    parentPort.postMessage('resume');
    setTimeout(tick, workerData.catchUpMs);
  } else if (m === 'stop') {
    stopped = true;
    try { if (db) { db.pragma('wal_checkpoint(PASSIVE)'); db.close(); } } catch {}
    parentPort.postMessage('stopped');
  }
});
tick();
`;

export interface CheckpointerOptions {
  /** Between passes while the WAL is short. */
  intervalMs?: number;
  /** Between passes while the WAL holds longWalFrames frames (4 KiB each) or more. */
  catchUpMs?: number;
  longWalFrames?: number;
  /** Long passes in a row before asking the writer to hold its commits for one pass. */
  passesBeforePause?: number;
  /**
   * Holds the writer's commits: calls `paused` once no write transaction is open, and returns the
   * function that lets them go again. Without it the checkpointer only catches up between commits.
   */
  pauseWriter?: (paused: () => void) => () => void;
  onError?: (msg: string) => void;
}

/** A pause never lasts longer than this, whatever happens to the checkpointer thread. */
const MAX_PAUSE_MS = 1000;

export class Checkpointer {
  private readonly worker: Worker;
  private release: (() => void) | undefined;
  private releaseTimer: NodeJS.Timeout | undefined;

  constructor(path: string, opts: CheckpointerOptions = {}) {
    const driver = createRequire(import.meta.url).resolve('better-sqlite3');
    const onError = opts.onError ?? (() => {});
    this.worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: {
        path,
        driver,
        intervalMs: opts.intervalMs ?? 500,
        catchUpMs: opts.catchUpMs ?? 2,
        longWalFrames: opts.longWalFrames ?? 4096,
        passesBeforePause: opts.passesBeforePause ?? 8,
        canPause: opts.pauseWriter !== undefined,
      },
    });
    this.worker.on('message', (m: unknown) => {
      if (m === 'pause' && opts.pauseWriter) {
        this.release = opts.pauseWriter(() => this.worker.postMessage('paused'));
        this.releaseTimer = setTimeout(() => this.resume(), MAX_PAUSE_MS);
      } else if (m === 'resume') {
        this.resume();
      } else if (m && typeof m === 'object' && 'error' in m) {
        onError(String((m as { error: unknown }).error));
      }
    });
    this.worker.on('error', (e) => {
      this.resume();
      onError(e.message);
    });
    this.worker.on('exit', () => this.resume());
    this.worker.unref();
  }

  private resume(): void {
    clearTimeout(this.releaseTimer);
    const release = this.release;
    this.release = undefined;
    release?.();
  }

  async stop(): Promise<void> {
    await stopWorker(this.worker, 'stop', 'stopped', 2000);
    this.resume();
  }
}
