// Preloaded into the soak's server process (node --expose-gc --import this): answers "sample" on
// the IPC channel with its heap after a full GC, so the soak reads the server's own heap.
const gc = (globalThis as { gc?: () => void }).gc;
process.on('message', (m) => {
  if (m !== 'sample') return;
  gc?.();
  const { heapUsed, rss } = process.memoryUsage();
  process.send?.({ heapUsed, rss });
});
// The channel alone never keeps the server alive.
(process.channel as { unref?: () => void } | undefined)?.unref?.();
