// The boot warning for a Docker engine shared with another server (docs/deploy.md, "Owner ids: several servers on one engine").
// Owners are distinct per server (instance-id.ts), so sharing is safe for the sandboxes; but each
// server's cap counts only its own, and an owner the operator does not know of is worth a look (a copy
// of this server's data dir, another deployment). "Live" is decided from the engine alone: the owner
// has running containers there (a server that crashed and never came back looks the same until its
// containers are removed; the warning names the owner so they can be). Replicas of this deployment
// (the Postgres store's, holding their liveness lock) are expected, and left out.
import type { Logger } from 'pino';
import type { PlacementStore } from '../../placements.js';
import type { DockerDriver } from './driver.js';
import { INSTANCE_LABEL } from '../../host/workdir.js';

export async function warnOfNeighbours(driver: DockerDriver, owner: string, siblings: PlacementStore | undefined, log: Logger): Promise<number> {
  let warned = 0;
  for (const n of await driver.neighbours()) {
    if (siblings && (await siblings.isLive(n.owner).catch(() => false))) continue;
    warned++;
    log.warn(
      { engine: n.engine, owner: n.owner, running: n.running, this_owner: owner },
      `another rft-endpoints server (owner ${n.owner}) has ${n.running} running sandbox container(s) on engine ${n.engine}: ` +
        `its sandboxes are not this server's to reap and not counted in this server's cap; if that server is gone for good, ` +
        `remove them: docker rm -f $(docker ps -aq --filter label=${INSTANCE_LABEL}=${n.owner})`,
    );
  }
  return warned;
}
