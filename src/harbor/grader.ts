// The `harbor` grader: a Harbor task's own tests score the rollout (docs/harbor.md, "The reward"). It
// runs Harbor's verify step, hardened (verify.ts), in the rollout's sandbox, the task's container, and
// turns the verdict into the score: `reward.json`'s `reward` (else the mean of its values) or
// `reward.txt`'s number, the other `reward.json` names as subscores. Harbor's failure kinds (no
// reward file, an empty or unparsable one, the verifier over its timeout) are the model's 0; what the
// verify step throws (the sandbox or its engine failed) is ours, a coded 5xx the trainer retries.
//
// Built into the server, not a unit of graders/: it needs the tasks the environments loaded (the row
// names one by `sandbox.harbor`) and the sandbox provider (separate verifier mode's fresh container).
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { errors, isRftError } from '../errors.js';
import type { LoadedGrader } from '../registry/loader.js';
import { defineGrader, type GraderResult } from '../registry/define.js';
import type { Sandbox } from '../sandbox/types.js';
import type { RecordedCall } from '../store/records.js';
import { z } from 'zod';
import type { HarborTask, HarborTaskLookup, HarborVerdict } from './types.js';

export interface HarborGraderOptions {
  tasks: HarborTaskLookup;
  /** Runs the verify step; given the grading run's trace id and signal (separate mode's fresh sandbox needs both). */
  verify: (sandbox: Sandbox, task: HarborTask, run: { traceId: string; signal: AbortSignal }) => Promise<HarborVerdict>;
}

const NAME = 'harbor';

/** The most of test.sh's output the explanation carries (the grade record keeps 2000 characters). */
const LOG_TAIL = 1200;

/**
 * The workspace graded must be the one the rollout worked in: a sandbox that expired or went with a
 * restart would be made again from the task's image, and its untouched state scored as the work.
 * Every call records the sandbox it got; a rollout that never used one left the image untouched.
 */
function assertSandboxSurvived(calls: readonly RecordedCall[], sandbox: Sandbox): void {
  const used = new Set(calls.flatMap((c) => (typeof c.sandbox === 'string' ? [c.sandbox] : [])));
  if (used.size === 0 || used.has(sandbox.id)) return;
  throw errors.graderFailed(NAME, "the rollout's sandbox no longer exists (it expired or the server restarted), so its work cannot be graded");
}

function tail(log: string): string {
  const t = log.trim();
  return t.length > LOG_TAIL ? `[...]\n${t.slice(-LOG_TAIL)}` : t;
}

/** A verdict as the grade: the score, the components as subscores, what decided it. */
export function verdictResult(task: HarborTask, v: HarborVerdict): GraderResult {
  if (v.kind === 'model') {
    const why = {
      RewardFileNotFound: 'tests/test.sh wrote no reward file',
      RewardFileEmpty: 'the reward file is empty',
      VerifierOutputParse: 'the reward file does not parse (reward.txt: one number; reward.json: an object of names to numbers)',
      VerifierTimeout: `tests/test.sh ran past [verifier] timeout_sec (${task.config.verifier.timeoutSec} s)`,
      VerifierToolsChanged: 'programs the verify step runs (a shell, the loader, a library) were changed in the container',
    }[v.reason];
    const whose = v.reason === 'VerifierToolsChanged' ? "this server's check" : `Harbor's ${v.reason}`;
    return { score: 0, explanation: [`${task.name}: 0, ${why} (${whose})`, tail(v.log)].filter(Boolean).join('\n') };
  }
  const parts = Object.entries(v.subscores).map(([k, n]) => `${k}=${n}`);
  const head = `${task.name}: ${v.score} from ${v.file}${parts.length ? ` (${parts.join(', ')})` : ''}`;
  return { score: v.score, ...(parts.length ? { subscores: v.subscores } : {}), explanation: [head, tail(v.log)].filter(Boolean).join('\n') };
}

const itemSchema = z.looseObject({ sandbox: z.looseObject({ harbor: z.string().min(1) }) });

/** The grader, as the registry holds a loaded one. */
export function harborGrader(o: HarborGraderOptions): LoadedGrader {
  const def = defineGrader({
    name: NAME,
    description: "A Harbor task's tests/test.sh, run after the episode in the task's container (Harbor's verify step, hardened): reward.json's reward (else the mean of its values) or reward.txt.",
    readsCalls: true,
    itemSchema,
    async handler({ item }, ctx): Promise<GraderResult> {
      const ref = itemSchema.parse(item).sandbox.harbor;
      const task = o.tasks(ref);
      if (!task) throw errors.graderConfig('item.sandbox.harbor', `names Harbor task "${ref}", which this server does not serve`);
      let sandbox: Sandbox;
      try {
        const calls = await ctx.rollout.calls();
        sandbox = await ctx.sandbox();
        assertSandboxSurvived(calls, sandbox);
      } catch (e) {
        // The rollout's own commands took its container down (memory, processes): its work went with it.
        if (!isRftError(e) || e.code !== errors.sandboxEndedByRollout.code) throw e;
        return { score: 0, explanation: `${task.name}: 0, the rollout's commands took its sandbox down (they exhausted its memory or processes) and its work went with it` };
      }
      const verdict = await o.verify(sandbox, task, { traceId: ctx.traceId, signal: ctx.signal });
      return verdictResult(task, verdict);
    },
  });
  const file = import.meta.filename;
  const version = createHash('sha256').update(readFileSync(file)).digest('hex').slice(0, 12);
  return { def, file, version, range: [0, 1], readsCalls: true, builtIn: true };
}
