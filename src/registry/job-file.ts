// The project's job.json: the fine-tuning job body `init` writes. What the user chose there (model,
// max_episode_steps, hyperparameters) is what /v1/job-config and `job body` answer, so the server's
// fragment never contradicts the project's own file. Read once at boot: a broken file stops it.
import { existsSync, readFileSync } from 'node:fs';
import { z } from 'zod';
import { errors } from '../errors.js';

const reinforcementSchema = z.looseObject({
  grader: z.looseObject({ rate_limit: z.number().positive().optional(), pass_threshold: z.number().optional() }).optional(),
  max_episode_steps: z.number().int().positive().optional(),
  hyperparameters: z.record(z.string(), z.unknown()).optional(),
});
const jobSchema = z.looseObject({
  model: z.string().min(1).optional(),
  method: z.looseObject({ type: z.string().optional(), reinforcement: reinforcementSchema.optional() }).optional(),
});

export type JobFile = z.output<typeof jobSchema>;

/** Without a job.json: what the README's example job uses. */
export const JOB_DEFAULTS = { model: 'o4-mini-2025-04-16', maxEpisodeSteps: 10 } as const;

/** The job body in `path`, or undefined when it is absent and not required. Throws RFT_ERR_CONFIG. */
export function loadJobFile(path: string, required: boolean): JobFile | undefined {
  if (!existsSync(path)) {
    if (required) throw errors.config(`RFT_JOB_FILE: ${path} does not exist`, { path });
    return undefined;
  }
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, 'utf8'));
  } catch (e) {
    throw errors.config(`${path}: not a JSON job body (${(e as Error).message})`, { path });
  }
  const parsed = jobSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw errors.config(`${path}: ${issue.path.join('.') || '(root)'}: ${issue.message}`, { path });
  }
  return parsed.data;
}
