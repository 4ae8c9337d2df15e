// Moves SQLite's WAL checkpoints (page copies and fsyncs of the database file) off the event loop:
// a worker thread with its own connection runs PASSIVE checkpoints, which never block the writer.
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

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
// Under sustained writes a checkpoint rarely ends with the WAL fully copied (frames keep coming),
// and the WAL only starts over from its beginning when one does: so while the WAL is long, passes
// follow each other closely until one catches up between two commits, and the WAL is reused.
function tick() {
  if (stopped) return;
  let soon = false;
  try {
    const [r] = db.pragma('wal_checkpoint(PASSIVE)');
    soon = r.log >= workerData.longWalFrames;
  } catch (e) { parentPort.postMessage({ error: String(e && e.message || e) }); }
  setTimeout(tick, soon ? workerData.catchUpMs : workerData.intervalMs);
}
parentPort.on('message', (m) => {
  if (m === 'stop') { stopped = true; try { if (db) { db.pragma('wal_checkpoint(PASSIVE)'); db.close(); } } catch {} parentPort.postMessage('stopped'); }
});
tick();
`;

export class Checkpointer {
  private readonly worker: Worker;

  /**
   * intervalMs: between passes; catchUpMs: between passes while the WAL holds longWalFrames or more
   * (4 KiB each), until it starts over.
   */
  constructor(path: string, intervalMs = 500, onError: (msg: string) => void = () => {}, catchUpMs = 2, longWalFrames = 4096) {
    const driver = createRequire(import.meta.url).resolve('better-sqlite3');
    this.worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { path, intervalMs, driver, catchUpMs, longWalFrames } });
    this.worker.on('message', (m: unknown) => {
      if (m && typeof m === 'object' && 'error' in m) onError(String((m as { error: unknown }).error));
    });
    this.worker.on('error', (e) => onError(e.message));
    this.worker.unref();
  }

  async stop(): Promise<void> {
    const done = new Promise<void>((resolve) => {
      this.worker.once('message', () => resolve());
      this.worker.once('exit', () => resolve());
    });
    // Unref'ed while running so it never holds the process open; ref'ed while we wait for it.
    this.worker.ref();
    this.worker.postMessage('stop');
    await Promise.race([done, new Promise((r) => setTimeout(r, 2000).unref())]);
    await this.worker.terminate();
  }
}
