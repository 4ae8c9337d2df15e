// Runs the unit_tests grader against real sandboxes: a rollout sandbox made from a task's template
// (changed the way an agent would change it), and fresh grading sandboxes from the same driver.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import pino from 'pino';
import unitTests from '../../graders/unit_tests.js';
import applyPatch from '../../tools/apply_patch.js';
import type { GraderContext, GraderResult } from '../../src/registry/define.js';
import type { BudgetUsage, RecordedCall } from '../../src/store/records.js';
import type { Sandbox, SandboxDriver, SandboxLimits } from '../../src/sandbox/types.js';
import { repoRoot } from '../helpers/server.js';
import { gradingLimits } from '../../src/sandbox/workspace/limits.js';
import { limits, runTool, sandboxSpec } from '../helpers/sandboxes.js';

export const TASKS = ['roman', 'inventory', 'stats', 'slugify', 'intervals', 'orders', 'duration'] as const;
export const tasksDir = join(repoRoot, 'examples/coding/tasks');

/** A task's row in `fraction` mode (the tests below check partial credit on the untouched template). */
export const taskItem = (id: string) => ({
  sandbox: { template: `coding/tasks/${id}/workspace`, hidden: `coding/tasks/${id}/hidden` },
  unit_tests: { mode: 'fraction' },
});

export async function applySolution(sb: Sandbox, id: string): Promise<void> {
  await runTool(applyPatch, { patch: readFileSync(join(tasksDir, id, 'solution.patch'), 'utf8') }, sb);
}

export async function grade(
  driver: SandboxDriver,
  id: string,
  change: (sb: Sandbox) => Promise<unknown> = async () => {},
  budget: BudgetUsage = { used: 4, limit: 50, exceeded: false },
  itemExtra: Record<string, unknown> = {},
  calls: RecordedCall[] = [],
  more: {
    /** Sees the grading sandboxes (the grader's fresh ones) before they are destroyed. */
    inspect?: (grading: Sandbox[]) => Promise<void>;
    /** The rollout's limits (default: the test helpers'); its grading sandboxes get gradingLimits of them. */
    limits?: SandboxLimits;
    /** The rollout's sandbox as the grader gets it (default: as made). */
    view?: (rollout: Sandbox) => Sandbox;
  } = {},
): Promise<GraderResult> {
  const traceId = `trace_${randomUUID()}`;
  const item = { ...taskItem(id), ...itemExtra };
  const rolloutLimits = more.limits ?? limits;
  const rollout = await driver.create({ ...sandboxSpec(traceId, { templateDir: join(tasksDir, id, 'workspace') }), limits: rolloutLimits });
  const grading: Sandbox[] = [];
  try {
    await change(rollout);
    const ctx: GraderContext = {
      traceId,
      rollout: { traceId, item, calls: async () => calls, budget: async () => budget },
      log: pino({ level: 'silent' }),
      signal: new AbortController().signal,
      templatesRoot: join(repoRoot, 'examples'),
      sandbox: async () => (more.view ? more.view(rollout) : rollout),
      freshSandbox: async (opts = {}) => {
        // as SandboxManager.createEphemeral does
        const sb = await driver.create({ ...sandboxSpec(traceId, opts), limits: gradingLimits(rolloutLimits) });
        grading.push(sb);
        return sb;
      },
    };
    const r = await unitTests.handler({ sample: { output_text: 'done' }, item, traceId }, ctx);
    await more.inspect?.(grading);
    return typeof r === 'number' ? { score: r } : r;
  } finally {
    await Promise.allSettled([rollout, ...grading].map((s) => s.destroy()));
  }
}

/** A recorded successful call of a coding tool that finished at `finishedAt` (ms) in the sandbox with id `sandbox`. */
export function okCall(tool: string, finishedAt: number, sandbox: string | null): RecordedCall {
  return {
    traceId: 't', callId: `call_${finishedAt}`, seq: 1, tool, arguments: '{}', argsHash: '', output: 'ok', status: 'ok', cost: 1,
    credential: null, startedAt: finishedAt - 10, finishedAt, durationMs: 10, outputBytes: 2, truncated: false, sandbox,
  };
}
