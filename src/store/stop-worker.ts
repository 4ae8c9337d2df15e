// Stopping the store's worker threads (checkpointer, writer, WAL syncer): ask, wait for the answer or the exit
// at most timeoutMs, then terminate whatever is left.
import type { Worker } from 'node:worker_threads';

/** `request`: a message to post, or a function that asks some other way (e.g. through shared memory). */
export async function stopWorker(worker: Worker, request: string | (() => void), answer: string, timeoutMs: number): Promise<void> {
  const done = new Promise<void>((resolve) => {
    worker.on('message', (m) => m === answer && resolve());
    worker.once('exit', () => resolve());
  });
  // Unref'ed while it runs so it never holds the process open; ref'ed while we wait for it.
  worker.ref();
  if (typeof request === 'string') worker.postMessage(request);
  else request();
  await Promise.race([done, new Promise((r) => setTimeout(r, timeoutMs).unref())]);
  await worker.terminate();
}
