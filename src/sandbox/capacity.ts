// The default cap on live sandboxes (RFT_SANDBOX_CAP unset), per driver, sized from what an idle
// sandbox costs the host (bench/idle-cost.ts; figures and command lines in bench/README.md).
//
// A training step starts hundreds of rollouts at once (the published Agent RFT runs: up to 500),
// and the previous step's sandboxes are still there for their grace period (RFT_SANDBOX_GRACE_MS)
// when it does; at the cap, those graded sandboxes are reclaimed first (manager.ts), but rollouts
// the trainer dropped without a grade hold their slots until the inactivity TTL. So the default
// leaves room for two full steps, where the cost allows it.
//
// bwrap (measured, 200 idle sandboxes that each ran a command): 2 processes (bubblewrap's monitor
//   and the holder), 262 KB of their PSS, 486 KB of kernel memory (namespaces, mounts, stacks, page
//   tables), 4 KB and 5 inodes of workspace tmpfs, one uid claim: about 0.75 MB and 2 pids. 1,024 of
//   them: about 0.8 GB and 2,048 processes (pid_max is 32,768 on a default kernel), while a busy
//   rollout's own use is bounded by its limits, not by this.
// docker (measured, 30 idle containers on one engine): 3 processes (containerd-shim, docker-init,
//   sleep), 3.4 MB of their PSS, 0.7 MB of dockerd and containerd growth, 0.9 MB of kernel memory:
//   about 5 MB (8.5 MB by the host's available memory, page cache included), and every one is
//   created by the engine at about 170 ms. 512 of them: about 2.5-4.3 GB on the engine's host. The
//   cap applies per replica, and per engine unless RFT_DOCKER_HOSTS gives one (?cap=).
// process: no isolation, development only; it costs less than bwrap (no holder).
import type { SandboxDriver } from './types.js';

export const DEFAULT_SANDBOX_CAP: Record<SandboxDriver['name'], number> = {
  bwrap: 1024,
  process: 1024,
  docker: 512,
};

/** The configured cap, or the driver's default. */
export function sandboxCap(configured: number | undefined, driver: SandboxDriver['name']): number {
  return configured ?? DEFAULT_SANDBOX_CAP[driver];
}
