// One id for the whole run (inherited by every test worker), and a teardown that removes whatever
// containers of this run are still on an engine once every file is done: a failed test skips its own
// cleanup, and Postgres replicas stopped with SIGTERM leave their recorded sandboxes to replicas that
// no longer exist. Only this run's (label rft-endpoints.test-run): other runs share these engines.
import { randomUUID } from 'node:crypto';

export default async function setup(): Promise<() => Promise<void>> {
  process.env.RFT_TEST_RUN ??= `run-${randomUUID().slice(0, 12)}`;
  const { removeRunContainers } = await import('./helpers/run-label.js');
  return async () => {
    const left = await removeRunContainers();
    if (left.length) console.warn(`[teardown] removed ${left.length} container(s) this run left: ${left.join(', ')}`);
  };
}
