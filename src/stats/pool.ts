// The sandbox warm pool's state in GET /v1/stats (this replica's, read from its driver when asked):
// per kind of sandbox the pool prepares, what is warm and in use, the step it learned, and the last
// few steps with how many of their new rollouts it served (hits) and how many were made cold (misses).
import { z } from 'zod';
import type { WarmPoolStats } from '../sandbox/types.js';

const step = z.object({
  started_at: z.string().describe('its first new rollout (ISO)'),
  last_at: z.string().describe('its latest new rollout (ISO)'),
  size: z.number().describe('new rollouts in it (hits + misses)'),
  hits: z.number().describe('new rollouts served a prepared sandbox from the pool'),
  misses: z.number().describe('new rollouts whose sandbox was made on demand (cold)'),
});

export const poolSchema = z
  .object({
    warm: z.number().describe('prepared, idle sandboxes (all kinds)'),
    target: z.number().describe('what the pool fills to now for the latest kind (the floor while a step arrives and when idle)'),
    predicted: z.number().describe("the next step's expected size (the latest kind)"),
    hits: z.number().describe('new sandboxes served from the pool since start (rft_sandbox_pool_takes_total{outcome="hit"})'),
    misses: z.number().describe('new sandboxes made on demand since start (rft_sandbox_pool_takes_total{outcome="miss"})'),
    bounds: z.object({
      floor: z.number().describe('kept prepared whatever the arrivals (RFT_SANDBOX_WARM)'),
      max: z.number().describe('the most the learned size may reach: the lesser of cap and budget_mb at prepared_kb each (0: no learning)'),
      budget_mb: z.number().nullable().describe('RFT_SANDBOX_WARM_MAX_MB; null: no learning'),
      prepared_kb: z.number().nullable().describe('what one prepared, idle sandbox costs the host (measured per driver)'),
      cap: z.number().nullable().describe("the driver's sandbox cap"),
      burst_gap_ms: z.number().describe('quiet time that ends a step (a burst of new rollouts)'),
      idle_ms: z.number().describe('no new rollout for this long: the pool shrinks to its floor (RFT_SANDBOX_WARM_IDLE_MS)'),
    }),
    kinds: z
      .array(
        z.object({
          kind: z.string().describe('what its sandboxes are prepared with (tmpfs caps, read-only mounts)'),
          latest: z.boolean().describe('the kind of the latest new rollout (the floor is kept for it)'),
          warm: z.number(),
          in_use: z.number().describe('held by rollouts (from the pool or made cold), not destroyed yet'),
          target: z.number(),
          predicted: z.number(),
          steps: z.array(step).describe('the last steps, oldest first (a few only)'),
        }),
      )
      .describe('per kind of sandbox the pool learns for, the latest first'),
  })
  .nullable()
  .describe("the driver's warm pool (bwrap, process, docker); null when the driver keeps none");

const iso = (ms: number) => new Date(ms).toISOString();

export type PoolReply = z.infer<typeof poolSchema>;

export function poolReply(p: WarmPoolStats | null): PoolReply {
  if (!p) return null;
  const { floor, max, budgetMb, preparedKb, cap, gapMs, idleMs } = p.bounds;
  return {
    warm: p.warm,
    target: p.target,
    predicted: p.predicted,
    hits: p.hits,
    misses: p.misses,
    bounds: { floor, max, budget_mb: budgetMb, prepared_kb: preparedKb, cap, burst_gap_ms: gapMs, idle_ms: idleMs },
    kinds: p.kinds.map((k) => ({
      kind: k.kind,
      latest: k.latest,
      warm: k.warm,
      in_use: k.inUse,
      target: k.target,
      predicted: k.predicted,
      steps: k.steps.map((s) => ({ started_at: iso(s.startedAt), last_at: iso(s.lastAt), size: s.size, hits: s.hits, misses: s.misses })),
    })),
  };
}
