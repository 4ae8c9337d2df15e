// score_model and label_model: ask a chat model through any OpenAI-compatible /v1/chat/completions,
// with the messages templated from the sample and item, and the answer forced into a JSON schema
// (structured output), so "the model wrote prose" is a parse error, not a guess.
//
// score_model: the model answers {steps: [{description, conclusion}], result: number}; the reward
// is `result` normalized from `range` (default [0, 1]) to 0..1: (result - low) / (high - low),
// clamped, so configs with range [1, 10] still produce 0..1 rewards as endpoint graders must.
// label_model: the model answers {result: <one of labels>}; the reward is 1 when the label is in
// passing_labels, else 0.
// A refusal, a reply that is not the schema, or a label outside `labels` -> RFT_ERR_MODEL_GRADER.
import type { ChatCompletionCreateParamsNonStreaming, ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { errors } from '../errors.js';
import type { LabelModelConfig, ModelMessage, ScoreModelConfig } from './config.js';
import { modelClient, modelFailure, type ModelOptions } from './model-client.js';
import { renderTemplate, type TemplateScope } from './template.js';
import { addUsage, type RunUsage } from './usage.js';
import { clamp01 } from './helpers.js';

export interface ModelCallOptions {
  openai?: ModelOptions;
  signal?: AbortSignal;
  usage: RunUsage;
}

export interface ModelGrade {
  reward: number;
  /** The model's own answer (score or label), before normalization. */
  raw: number | string;
  explanation: string;
  outOfRange?: boolean;
}

const SCORE_SCHEMA = {
  type: 'object',
  properties: {
    steps: {
      type: 'array',
      items: {
        type: 'object',
        properties: { description: { type: 'string' }, conclusion: { type: 'string' } },
        required: ['description', 'conclusion'],
        additionalProperties: false,
      },
    },
    result: { type: 'number' },
  },
  required: ['steps', 'result'],
  additionalProperties: false,
};

function labelSchema(labels: string[]) {
  return {
    type: 'object',
    properties: { result: { type: 'string', enum: labels } },
    required: ['result'],
    additionalProperties: false,
  };
}

function renderMessages(input: ModelMessage[], scope: TemplateScope): ChatCompletionMessageParam[] {
  return input.map((m) => {
    const content =
      typeof m.content === 'string' ? renderTemplate(m.content, scope) : m.content.map((p) => renderTemplate(p.text, scope)).join('\n');
    return { role: m.role, content } as ChatCompletionMessageParam;
  });
}

function samplingOf(cfg: ScoreModelConfig | LabelModelConfig): Partial<ChatCompletionCreateParamsNonStreaming> {
  const s = cfg.sampling_params;
  if (!s) return {};
  return {
    ...(s.temperature !== undefined ? { temperature: s.temperature } : {}),
    ...(s.top_p !== undefined ? { top_p: s.top_p } : {}),
    ...(s.seed !== undefined ? { seed: s.seed } : {}),
    ...(s.max_completions_tokens !== undefined ? { max_completion_tokens: s.max_completions_tokens } : {}),
    ...(s.reasoning_effort !== undefined ? { reasoning_effort: s.reasoning_effort } : {}),
  };
}

/** Sends one structured-output request and returns the parsed JSON object. */
async function askJson(
  cfg: ScoreModelConfig | LabelModelConfig,
  scope: TemplateScope,
  schemaName: string,
  schema: Record<string, unknown>,
  opts: ModelCallOptions,
): Promise<Record<string, unknown>> {
  const messages = renderMessages(cfg.input, scope);
  const what = `${cfg.type} "${cfg.name}" (${cfg.model})`;
  let content: string | null | undefined;
  try {
    const res = await modelClient(opts.openai).chat.completions.create(
      {
        model: cfg.model,
        messages,
        response_format: { type: 'json_schema', json_schema: { name: schemaName, strict: true, schema } },
        ...samplingOf(cfg),
      },
      opts.signal ? { signal: opts.signal } : {},
    );
    addUsage(opts.usage, res.model || cfg.model, res.usage, { sampled: true });
    const msg = res.choices[0]?.message;
    if (msg?.refusal) throw errors.modelGrader('refusal', `${what} refused: ${msg.refusal}`);
    content = msg?.content;
  } catch (e) {
    throw modelFailure(e, what);
  }
  if (typeof content !== 'string' || content.trim() === '') throw errors.modelGrader('unparseable', `${what} sent no content`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(content);
  } catch {
    throw errors.modelGrader('unparseable', `${what} sent content that is not JSON: ${content.slice(0, 200)}`);
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw errors.modelGrader('unparseable', `${what} sent JSON that is not an object`);
  }
  return parsed as Record<string, unknown>;
}

function stepsText(steps: unknown): string {
  if (!Array.isArray(steps)) return '';
  return steps
    .map((s) => (s && typeof s === 'object' ? String((s as Record<string, unknown>).conclusion ?? '') : ''))
    .filter(Boolean)
    .join(' ');
}

export async function runScoreModel(cfg: ScoreModelConfig, scope: TemplateScope, opts: ModelCallOptions): Promise<ModelGrade> {
  const answer = await askJson(cfg, scope, 'score_model_result', SCORE_SCHEMA, opts);
  const result = answer.result;
  if (typeof result !== 'number' || !Number.isFinite(result)) {
    throw errors.modelGrader('unparseable', `score_model "${cfg.name}": "result" is not a finite number (${JSON.stringify(result)})`);
  }
  const [lo, hi] = cfg.range ?? [0, 1];
  const outOfRange = result < lo || result > hi;
  return {
    reward: clamp01((result - lo) / (hi - lo)),
    raw: result,
    explanation: stepsText(answer.steps) || `score ${result} in [${lo}, ${hi}]`,
    ...(outOfRange ? { outOfRange } : {}),
  };
}

export async function runLabelModel(cfg: LabelModelConfig, scope: TemplateScope, opts: ModelCallOptions): Promise<ModelGrade> {
  const answer = await askJson(cfg, scope, 'label_model_result', labelSchema(cfg.labels), opts);
  const label = answer.result;
  if (typeof label !== 'string' || !cfg.labels.includes(label)) {
    throw errors.modelGrader('unparseable', `label_model "${cfg.name}": ${JSON.stringify(label)} is not one of ${cfg.labels.join(', ')}`);
  }
  return { reward: cfg.passing_labels.includes(label) ? 1 : 0, raw: label, explanation: `label ${label}` };
}
