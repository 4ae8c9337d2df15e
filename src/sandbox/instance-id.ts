// Names this server's sandboxes (and other per-process leftovers) across restarts: derived from the
// data dir, so a restarted server finds, and reaps, what its crashed predecessor left.
import { createHash } from 'node:crypto';

export function instanceIdFor(dataDir: string): string {
  return `rft-${createHash('sha256').update(dataDir).digest('hex').slice(0, 12)}`;
}
