// Runs a task's hidden cases on a host copy of a workspace: pristine files laid over it, a fresh
// sandbox made from it, the runner started there. Used for the rollout's final workspace and, in
// improvement mode, for the untouched template.
import { createHash } from 'node:crypto';
import { cp, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve, sep } from 'node:path';
import type { GraderContext } from 'rft-endpoints';
import type { CasesFile } from './cases.js';
import { overlayFiles } from './overlay.js';
import { runCases, type RunOutcome } from './run.js';

export async function runHiddenOn(ctx: GraderContext, wsDir: string, hiddenDir: string, cases: CasesFile): Promise<RunOutcome> {
  await overlayFiles(join(hiddenDir, 'files'), wsDir);
  const sandbox = await ctx.freshSandbox({ templateDir: wsDir });
  return runCases(sandbox, cases, ctx.signal);
}

/** A host temp directory for the duration of `fn`. */
export async function withTempDir<T>(fn: (dir: string) => Promise<T>): Promise<T> {
  const tmp = await mkdtemp(join(tmpdir(), 'rft-unit-tests-'));
  try {
    const ws = join(tmp, 'ws');
    await mkdir(ws);
    return await fn(ws);
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
}

const baselines = new Map<string, Promise<Set<string>>>();

/** The template's run had a case kept off the CPU (runner.py, "Time"): no baseline, and nothing cached. */
export class BaselineStarved extends Error {}

/**
 * Names of the cases the untouched template already passes, measured once per task and cases
 * file for the life of the process (every rollout of a task starts from the same template).
 */
export function baselinePassing(ctx: GraderContext, templateDir: string, hiddenDir: string, cases: CasesFile): Promise<Set<string>> {
  const key = createHash('sha256').update(JSON.stringify([templateDir, hiddenDir, cases])).digest('hex');
  let p = baselines.get(key);
  if (!p) {
    p = withTempDir(async (ws) => {
      // as the sandbox does: a hidden folder kept inside the template is not part of the workspace
      const hidden = resolve(hiddenDir);
      await cp(templateDir, ws, { recursive: true, verbatimSymlinks: true, filter: (src) => src !== hidden && !src.startsWith(hidden + sep) });
      const outcome = await runHiddenOn(ctx, ws, hiddenDir, cases);
      if (outcome.cases === null) throw new Error(`baseline run on the template failed: ${outcome.failure}`);
      const starved = outcome.cases.find((c) => c.starved);
      if (starved) throw new BaselineStarved(`case "${starved.name}": ${starved.detail}`);
      return new Set(outcome.cases.filter((c) => c.passed).map((c) => c.name));
    });
    baselines.set(key, p);
    p.catch(() => baselines.delete(key)); // a failed measurement is retried by the next grade
  }
  return p;
}
