// Scores a coding rollout by the task's hidden test cases: the fraction passed (partial credit),
// times a budget penalty. The agent's final workspace is copied out of its sandbox, the task's
// pristine files are laid over it, and the cases run in a fresh sandbox through a runner the agent
// never saw (see _unit_tests/runner.py for why faking a pass does not work).
import { mkdtemp, rm, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { defineGrader, errors, type GraderContext, type Item } from '../src/index.js';
import { budgetPenalty } from '../src/grading/helpers.js';
import { workspaceSource } from '../src/sandbox/workspace.js';
import { readCases } from './_unit_tests/cases.js';
import { overlayFiles } from './_unit_tests/overlay.js';
import { runStaged, stageRunner } from './_unit_tests/run.js';

/** Where `item.sandbox.*` folders live: the server's templates root when the context says so. */
function templatesRoot(ctx: GraderContext): string {
  const fromCtx = (ctx as GraderContext & { templatesRoot?: string }).templatesRoot;
  return fromCtx ?? resolve(process.env.RFT_SANDBOX_TEMPLATES ?? 'examples');
}

/** Budget penalty settings a row may carry in `item.unit_tests`; defaults reward finishing in half the budget. */
function penaltyOptions(item: Item, limit: number): { target: number; floor: number } {
  const o = (item['unit_tests'] ?? {}) as { budget_target?: unknown; budget_floor?: unknown };
  const target = typeof o.budget_target === 'number' ? o.budget_target : Number.isFinite(limit) ? Math.ceil(limit / 2) : 20;
  const floor = typeof o.budget_floor === 'number' ? o.budget_floor : 0.5;
  return { target, floor };
}

export default defineGrader({
  name: 'unit_tests',
  description: 'Fraction of the hidden test cases (item.sandbox.hidden/cases.json) the final workspace passes, times a tool-budget penalty.',
  async handler({ item }, ctx) {
    const { hiddenDir } = await workspaceSource(item, templatesRoot(ctx));
    if (hiddenDir === undefined) throw errors.graderConfig('item.sandbox.hidden', 'the row names no hidden tests folder');
    const cases = await readCases(hiddenDir);

    const tmp = await mkdtemp(join(tmpdir(), 'rft-unit-tests-'));
    try {
      const ws = join(tmp, 'ws');
      await mkdir(ws);
      await (await ctx.sandbox()).copyOut(ws);
      await overlayFiles(join(hiddenDir, 'files'), ws);
      const staged = await stageRunner(ws, cases);
      const grading = await ctx.freshSandbox({ templateDir: ws });
      const outcome = await runStaged(grading, staged, cases, ctx.signal);

      const budget = await ctx.rollout.budget();
      const penalty = budgetPenalty(budget, penaltyOptions(item, budget.limit));
      if (outcome.cases === null) {
        return { score: 0, subscores: { tests_passed: 0, budget: penalty }, explanation: outcome.failure ?? 'no result' };
      }
      const passed = outcome.cases.filter((c) => c.passed).length;
      const fraction = passed / cases.cases.length;
      const failed = outcome.cases.filter((c) => !c.passed).map((c) => `${c.name}: ${c.detail}`);
      return {
        score: fraction * penalty,
        subscores: { tests_passed: fraction, budget: penalty },
        explanation: `${passed}/${cases.cases.length} hidden cases passed; budget ${budget.used}/${budget.limit} (x${penalty.toFixed(2)})` +
          (failed.length ? `\nfailed: ${failed.slice(0, 10).join('; ')}` : ''),
      };
    } finally {
      await rm(tmp, { recursive: true, force: true });
    }
  },
});
