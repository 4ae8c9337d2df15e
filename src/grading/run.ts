// Runs an OpenAI grader config locally and answers in the shape of OpenAI's
// POST /v1/fine_tuning/alpha/graders/run: { reward, metadata, sub_rewards }.
//
// Errors: runGraderConfig throws coded errors (RFT_ERR_TEMPLATE_PATH, RFT_ERR_FORMULA,
// RFT_ERR_MODEL_GRADER ...) instead of answering reward 0 with flags set, because a grader
// endpoint must not turn "could not grade" into a real-looking 0 (that trains the model on
// noise). metadata.errors is always present with every flag false, so the success shape matches
// OpenAI's; runErrorReply() builds OpenAI's flagged reply from a thrown error for routes that
// want to mimic /graders/run exactly.
import { errors, isRftError } from '../errors.js';
import type { Item, Sample } from '../protocol/wire.js';
import type { GraderConfig, StringCheckConfig, TextSimilarityConfig } from './config.js';
import { cosineSimilarity } from './cosine.js';
import { evaluateFormula, parseFormula } from './formula.js';
import { localSimilarity } from './similarity/index.js';
import type { ModelOptions } from './model-client.js';
import { runLabelModel, runScoreModel } from './model-graders.js';
import { renderTemplate, type TemplateScope } from './template.js';
import type { GraderRunResponse } from 'openai/resources/fine-tuning/alpha/graders';
import { emptyUsage, totalTokens, type RunUsage } from './usage.js';
import { runPythonSource, type PythonRun } from './python.js';

export interface RunOptions {
  openai?: ModelOptions;
  signal?: AbortSignal;
  /** Where python graders run (a fresh sandbox each); without it a python grader fails to grade. */
  python?: Omit<PythonRun, 'signal'>;
}

export type RunErrorFlags = GraderRunResponse.Metadata.Errors;

/**
 * OpenAI's reply, typed by the installed `openai` package itself (so the SDK's
 * client.fineTuning.alpha.graders.run() reads it unchanged), plus our explanation.
 */
export type RunResult = GraderRunResponse & {
  sub_rewards: Record<string, number>;
  /** Not in OpenAI's reply: a human-readable why, used as the endpoint grader's explanation. */
  explanation?: string;
};

export function noErrors(): RunErrorFlags {
  return {
    formula_parse_error: false,
    invalid_variable_error: false,
    model_grader_parse_error: false,
    model_grader_refusal_error: false,
    model_grader_server_error: false,
    model_grader_server_error_details: null,
    other_error: false,
    python_grader_runtime_error: false,
    python_grader_runtime_error_details: null,
    python_grader_server_error: false,
    python_grader_server_error_type: null,
    sample_parse_error: false,
    truncated_observation_error: false,
    unresponsive_reward_error: false,
  };
}

interface Graded {
  reward: number;
  scores: Record<string, number | string | boolean>;
  subRewards: Record<string, number>;
  explanation: string;
}

/** pass_threshold's verdict, reported in scores as `<name>.passed` (OpenAI's metadata has no field for it). */
const passedScore = (name: string, passed: boolean | undefined) => (passed === undefined ? {} : { [`${name}.passed`]: passed });

interface Ctx extends RunOptions {
  usage: RunUsage;
}

function stringCheck(g: StringCheckConfig, scope: TemplateScope): number {
  const input = renderTemplate(g.input, scope);
  const reference = renderTemplate(g.reference, scope);
  switch (g.operation) {
    case 'eq':
      return input === reference ? 1 : 0;
    case 'ne':
      return input !== reference ? 1 : 0;
    case 'like':
      return input.includes(reference) ? 1 : 0;
    case 'ilike':
      return input.toLowerCase().includes(reference.toLowerCase()) ? 1 : 0;
  }
}

async function textSimilarity(g: TextSimilarityConfig, scope: TemplateScope, ctx: Ctx): Promise<Graded> {
  const input = renderTemplate(g.input, scope);
  const reference = renderTemplate(g.reference, scope);
  let reward: number;
  if (g.evaluation_metric === 'cosine') {
    const raw = await cosineSimilarity(input, reference, ctx);
    // Endpoint rewards are 0..1; a negative cosine (opposed embeddings) is as wrong as orthogonal.
    reward = Math.max(0, raw);
  } else {
    reward = localSimilarity(g.evaluation_metric, input, reference);
  }
  const passed = g.pass_threshold !== undefined ? reward >= g.pass_threshold : undefined;
  return {
    reward,
    scores: { [g.name]: reward, ...passedScore(g.name, passed) },
    subRewards: {},
    explanation: `${g.evaluation_metric} ${reward.toFixed(4)}${passed !== undefined ? (passed ? ' (passed)' : ' (below pass_threshold)') : ''}`,
  };
}

async function grade(g: GraderConfig, scope: TemplateScope, ctx: Ctx): Promise<Graded> {
  switch (g.type) {
    case 'string_check': {
      const reward = stringCheck(g, scope);
      return { reward, scores: { [g.name]: reward }, subRewards: {}, explanation: `string_check ${g.operation}: ${reward}` };
    }
    case 'text_similarity':
      return textSimilarity(g, scope, ctx);
    case 'score_model':
    case 'label_model': {
      const r = g.type === 'score_model' ? await runScoreModel(g, scope, ctx) : await runLabelModel(g, scope, ctx);
      const passed = g.type === 'score_model' && g.pass_threshold !== undefined ? r.reward >= g.pass_threshold : undefined;
      return {
        reward: r.reward,
        scores: {
          [g.name]: r.reward,
          [`${g.name}.raw`]: r.raw,
          ...(r.outOfRange ? { [`${g.name}.out_of_range`]: 1 } : {}),
          ...passedScore(g.name, passed),
        },
        subRewards: {},
        explanation: r.explanation,
      };
    }
    case 'python': {
      if (!ctx.python) throw errors.graderFailed(g.name, 'python graders run in a sandbox, and none was given here');
      const reward = await runPythonSource(g.name, g.source, scope.sample as Sample, scope.item as Item, { ...ctx.python, signal: ctx.signal });
      const passed = g.pass_threshold !== undefined ? reward >= g.pass_threshold : undefined;
      return { reward, scores: { [g.name]: reward, ...passedScore(g.name, passed) }, subRewards: {}, explanation: `python grade() ${reward}` };
    }
    case 'multi': {
      const formula = parseFormula(g.calculate_output, Object.keys(g.graders));
      const entries = Object.entries(g.graders);
      // Sub-graders are independent; model-backed ones dominate the time, so run them together.
      const parts = await Promise.all(entries.map(([, sub]) => grade(sub, scope, ctx)));
      const subRewards: Record<string, number> = {};
      entries.forEach(([key], i) => (subRewards[key] = (parts[i] as Graded).reward));
      const reward = evaluateFormula(formula, subRewards);
      return {
        reward,
        scores: { ...subRewards },
        subRewards,
        explanation: entries.map(([key], i) => `${key}: ${(parts[i] as Graded).explanation}`).join('; '),
      };
    }
  }
}

/** Trainer samples may leave output_text null when the model only called tools; templates see "". */
function normalizeSample(sample: Sample): Sample {
  return { ...sample, output_text: sample.output_text ?? '', output_tools: sample.output_tools ?? [] };
}

export async function runGraderConfig(grader: GraderConfig, sample: Sample, item: Item, opts: RunOptions = {}): Promise<RunResult> {
  const started = performance.now();
  const usage = emptyUsage();
  if (opts.signal?.aborted) throw errors.modelGrader('aborted', 'grading was aborted before it started');
  const r = await grade(grader, { sample: normalizeSample(sample), item: item ?? {} }, { ...opts, usage });
  if (!Number.isFinite(r.reward)) throw errors.graderBadScore(grader.name, `reward is ${r.reward}`);
  return {
    reward: r.reward,
    metadata: {
      name: grader.name,
      type: grader.type,
      errors: noErrors(),
      execution_time: (performance.now() - started) / 1000,
      scores: r.scores,
      token_usage: totalTokens(usage),
      sampled_model_name: usage.sampledModel,
    },
    model_grader_token_usage_per_model: usage.perModel,
    sub_rewards: r.subRewards,
    explanation: r.explanation,
  };
}

/** OpenAI's reply for a run that failed: reward 0 and the matching error flag set. */
export function runErrorReply(grader: Pick<GraderConfig, 'name' | 'type'>, err: unknown): RunResult {
  const flags = noErrors();
  const code = isRftError(err) ? err.code : '';
  const kind = isRftError(err) ? String(err.details?.kind ?? '') : '';
  if (code === errors.formula.code) flags.formula_parse_error = true;
  else if (code === errors.templatePath.code) flags.invalid_variable_error = true;
  else if (code === errors.modelGrader.code && kind === 'refusal') flags.model_grader_refusal_error = true;
  else if (code === errors.modelGrader.code && kind === 'unparseable') flags.model_grader_parse_error = true;
  else if (code === errors.graderFailed.code && grader.type === 'python') {
    flags.python_grader_runtime_error = true;
    flags.python_grader_runtime_error_details = err instanceof Error ? err.message : String(err);
  } else if (code === errors.modelGrader.code) {
    flags.model_grader_server_error = true;
    flags.model_grader_server_error_details = err instanceof Error ? err.message : String(err);
  } else flags.other_error = true;
  return {
    reward: 0,
    metadata: { name: grader.name, type: grader.type, errors: flags, execution_time: 0, scores: {}, token_usage: null, sampled_model_name: null },
    model_grader_token_usage_per_model: {},
    sub_rewards: {},
  };
}
