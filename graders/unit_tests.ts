// Scores a coding rollout by the task's hidden test cases, times a budget penalty. The agent's
// final workspace is copied out of its sandbox, the task's pristine files are laid over it, and the
// cases run in a fresh sandbox through a runner the agent never saw (see _unit_tests/runner.py for
// why faking a pass does not work).
//
// Modes (`item.unit_tests.mode`):
//   improvement         cases newly passed minus cases broken, over the cases the template fails:
//                       doing nothing scores 0 (the default for rows with a template);
//   fraction            the fraction of cases passed: partial credit, but doing nothing already
//                       earns what the untouched template passes (the default without a template,
//                       where there is no baseline to improve on).
import { defineGrader, errors, isRftError, z, type GraderContext, type GraderResult, type Item, type Sandbox } from 'rft-endpoints';
import { budgetPenalty } from 'rft-endpoints/grading';
import { copyNote, workspaceSource, type CopyReport } from 'rft-endpoints/sandbox';
import { readCases } from './_unit_tests/cases.js';
import { BaselineStarved, baselinePassing, runHiddenOn, withTempDir } from './_unit_tests/grade-dir.js';
import { RolloutLoad, settleStarved } from './_unit_tests/starved.js';
import type { CaseResult } from './_unit_tests/run.js';
import type { RecordedCall } from 'rft-endpoints';

/** Where `item.sandbox.*` folders live: the server's templates root when the context says so. */
function templatesRoot(ctx: GraderContext): string {
  return ctx.templatesRoot;
}

interface Options {
  mode: 'fraction' | 'improvement';
  target: number;
  floor: number;
}

function hasTemplate(item: Item): boolean {
  const sb = item['sandbox'];
  return !!sb && typeof sb === 'object' && typeof (sb as { template?: unknown }).template === 'string';
}

/** Settings a row may carry in `item.unit_tests`; the default budget target is half the budget. */
function options(item: Item, limit: number): Options {
  const o = (item['unit_tests'] ?? {}) as { mode?: unknown; budget_target?: unknown; budget_floor?: unknown };
  if (o.mode !== undefined && o.mode !== 'fraction' && o.mode !== 'improvement') {
    throw errors.graderConfig('item.unit_tests.mode', 'must be "fraction" or "improvement"');
  }
  return {
    // Doing nothing must not pay: improve on the template whenever there is one to measure.
    mode: o.mode ?? (hasTemplate(item) ? 'improvement' : 'fraction'),
    target: typeof o.budget_target === 'number' ? o.budget_target : Number.isFinite(limit) ? Math.ceil(limit / 2) : 20,
    floor: typeof o.budget_floor === 'number' ? o.budget_floor : 0.5,
  };
}

/**
 * Refuses to grade a workspace that is not the one the rollout worked in (its sandbox expired, the
 * server restarted, a regrade came after the grace period, and ctx.sandbox() made a new one from the
 * template): that would score the untouched template as the agent's work. Every call records the id
 * of the sandbox it got (any tool, native or bridged, whatever its outcome: a failed call may have
 * written too); ids are new per creation and kept by the driver where no command reaches them (a
 * container label, the server's memory), so nothing the rollout does inside (late writes, changed
 * clocks, a file it deletes) can make its own workspace look new, nor a new one look like its own.
 * A rollout that never used a sandbox has nothing to lose: the template is what it left.
 */
function assertWorkspaceSurvived(calls: readonly RecordedCall[], sandbox: Sandbox): void {
  const used = new Set(calls.flatMap((c) => (typeof c.sandbox === 'string' ? [c.sandbox] : [])));
  if (used.size === 0 || used.has(sandbox.id)) return;
  throw errors.graderFailed('unit_tests', "the rollout's workspace no longer exists (its sandbox expired or the server restarted), so its work cannot be graded");
}

/** Newly passed minus newly failed, over the cases the template fails (1 when it fails none and none broke). */
function improvement(results: CaseResult[], baseline: Set<string>): number {
  const open = results.filter((c) => !baseline.has(c.name));
  const gained = open.filter((c) => c.passed).length;
  const lost = results.filter((c) => baseline.has(c.name) && !c.passed).length;
  if (open.length === 0) return lost === 0 ? 1 : 0;
  return Math.max(0, (gained - lost) / open.length);
}

export default defineGrader({
  name: 'unit_tests',
  description:
    'Hidden test cases (item.sandbox.hidden/cases.json) run on the final workspace in a fresh sandbox: the fraction passed ' +
    '(or, with item.unit_tests.mode = "improvement", the improvement over the untouched template), times a tool-budget penalty.',
  // It checks the calls' sandbox ids (the workspace graded is the one the rollout worked in).
  readsCalls: true,
  itemSchema: z.looseObject({
    sandbox: z.looseObject({ hidden: z.string().min(1), template: z.string().min(1).optional() }),
    unit_tests: z
      .looseObject({
        mode: z.enum(['fraction', 'improvement']).optional(),
        budget_target: z.number().min(0).optional(),
        budget_floor: z.number().min(0).max(1).optional(),
      })
      .optional(),
  }),
  async handler({ item }, ctx): Promise<GraderResult> {
    const source = await workspaceSource(item, templatesRoot(ctx));
    if (source.hiddenDir === undefined) throw errors.graderConfig('item.sandbox.hidden', 'the row names no hidden tests folder');
    const hiddenDir = source.hiddenDir;
    const cases = await readCases(hiddenDir);
    const budget = await ctx.rollout.budget();
    const opts = options(item, budget.limit);
    if (opts.mode === 'improvement' && source.templateDir === undefined) {
      throw errors.graderConfig('item.sandbox.template', 'improvement mode needs the template to measure the baseline');
    }

    const penalty = budgetPenalty(budget, { target: opts.target, floor: opts.floor });
    let outcome: Awaited<ReturnType<typeof runHiddenOn>>;
    let copied: CopyReport | undefined;
    let load: RolloutLoad | undefined;
    try {
      const calls = await ctx.rollout.calls();
      const rolloutSandbox = await ctx.sandbox();
      assertWorkspaceSurvived(calls, rolloutSandbox);
      load = new RolloutLoad(rolloutSandbox);
      // The copy leaves out what a fresh sandbox could not hold (special files, too deep paths, what
      // is past its disk and inode budget) and says so: what the rollout broke scores the cases that
      // still pass, never a failed grade the trainer would discard.
      outcome = await withTempDir(async (ws) => {
        copied = await rolloutSandbox.copyOut(ws);
        return runHiddenOn(ctx, ws, hiddenDir, cases);
      });
    } catch (e) {
      // The rollout's own commands ended its sandbox (they exhausted its memory or processes): its work is gone,
      // by its own doing, so no case passes; a 5xx here would have the trainer discard the rollout.
      if (!isRftError(e) || e.code !== errors.sandboxEndedByRollout.code) throw e;
      return {
        score: 0,
        subscores: { tests_passed: 0, budget: penalty },
        explanation: `0/${cases.cases.length} hidden cases passed: the rollout's commands took its sandbox down (they exhausted its memory or processes) and its workspace went with it`,
      };
    }
    const note = copied ? copyNote(copied) : '';
    if (outcome.cases !== null) outcome = { ...outcome, cases: await settleStarved(outcome.cases, load) };
    if (outcome.cases === null) {
      return { score: 0, subscores: { tests_passed: 0, budget: penalty }, explanation: [outcome.failure ?? 'no result', note].filter(Boolean).join('\n') };
    }
    const passed = outcome.cases.filter((c) => c.passed).length;
    const fraction = passed / cases.cases.length;
    const failed = outcome.cases.filter((c) => !c.passed).map((c) => `${c.name}: ${c.detail}`);
    let explanation = `${passed}/${cases.cases.length} hidden cases passed`;
    const subscores: Record<string, number> = { tests_passed: fraction, budget: penalty };
    let base = fraction;
    if (opts.mode === 'improvement') {
      let baseline: Set<string>;
      try {
        baseline = await baselinePassing(ctx, source.templateDir as string, hiddenDir, cases);
      } catch (e) {
        if (!(e instanceof BaselineStarved)) throw e;
        // The template's run was kept off the CPU: by the rollout's leftovers (its zero), else by the machine (ours).
        if (!(await load?.busy())) throw errors.graderFailed('unit_tests', `the machine was too loaded to measure the template's baseline (${e.message})`);
        return {
          score: 0,
          subscores: { tests_passed: fraction, improvement: 0, budget: penalty },
          explanation: `${explanation}; the template's baseline could not be measured: the rollout's own processes, still running in its sandbox, kept the machine busy`,
        };
      }
      base = improvement(outcome.cases, baseline);
      subscores.improvement = base;
      explanation += ` (the untouched template passes ${baseline.size}); improvement ${base.toFixed(2)}`;
    }
    explanation += `; budget ${budget.used}/${budget.limit} (x${penalty.toFixed(2)})`;
    if (failed.length) explanation += `\nfailed: ${failed.slice(0, 10).join('; ')}`;
    if (note) explanation += `\n${note}`;
    return { score: base * penalty, subscores, explanation };
  },
});
