// OpenAI grader configs (string_check, text_similarity, score_model, label_model, multi), checked
// once when loaded so a bad field fails at boot with a path to it ("graders.exact.operation"),
// never at grading time. Unknown fields are refused too: a misspelt "operator" silently ignored
// would grade with a default nobody chose.
import { z } from 'zod';
import { errors } from '../errors.js';
import { parseFormula } from './formula.js';
import { LOCAL_METRICS } from './similarity/index.js';
import { SAMPLE_FIELDS, templatePaths } from './template.js';
import { PYTHON_SOURCE_MAX_BYTES } from './python.js';

export const GRADER_TYPES = ['string_check', 'text_similarity', 'score_model', 'label_model', 'python', 'multi'] as const;
export const SIMILARITY_METRICS = [...LOCAL_METRICS, 'cosine'] as const;

const name = z.string().min(1).max(200);
const template = z.string();

const contentPart = z.strictObject({
  type: z.enum(['input_text', 'output_text', 'text']),
  text: template,
});

const message = z.strictObject({
  type: z.literal('message').optional(),
  role: z.enum(['system', 'developer', 'user', 'assistant']),
  content: z.union([template, z.array(contentPart).min(1)]),
});

const samplingParams = z.strictObject({
  temperature: z.number().min(0).max(2).optional(),
  top_p: z.number().gt(0).max(1).optional(),
  seed: z.number().int().optional(),
  max_completions_tokens: z.number().int().positive().optional(),
  reasoning_effort: z.enum(['minimal', 'low', 'medium', 'high']).optional(),
});

const stringCheck = z.strictObject({
  type: z.literal('string_check'),
  name,
  input: template,
  reference: template,
  operation: z.enum(['eq', 'ne', 'like', 'ilike']),
});

const textSimilarity = z.strictObject({
  type: z.literal('text_similarity'),
  name,
  input: template,
  reference: template,
  evaluation_metric: z.enum(SIMILARITY_METRICS),
  pass_threshold: z.number().optional(),
});

const scoreModel = z.strictObject({
  type: z.literal('score_model'),
  name,
  model: z.string().min(1),
  input: z.array(message).min(1),
  range: z
    .tuple([z.number(), z.number()])
    .refine(([lo, hi]) => lo < hi, 'range must be [low, high] with low < high')
    .optional(),
  sampling_params: samplingParams.optional(),
  pass_threshold: z.number().optional(),
});

const labelModel = z.strictObject({
  type: z.literal('label_model'),
  name,
  model: z.string().min(1),
  input: z.array(message).min(1),
  labels: z.array(z.string().min(1)).min(1),
  passing_labels: z.array(z.string().min(1)).min(1),
  sampling_params: samplingParams.optional(),
});

// OpenAI's python grader: `grade(sample, item) -> float` in `source` (under 256 kB), run in a sandbox (python.ts).
const python = z.strictObject({
  type: z.literal('python'),
  name,
  source: z.string().min(1).refine((s) => Buffer.byteLength(s) < PYTHON_SOURCE_MAX_BYTES, 'source must be less than 256 kB'),
  image_tag: z.string().optional(),
  pass_threshold: z.number().optional(),
});

const multi = z.strictObject({
  type: z.literal('multi'),
  name,
  get graders() {
    return z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'sub-grader keys must be identifiers usable in calculate_output'), graderSchema);
  },
  calculate_output: z.string().min(1),
});

const graderSchema = z.discriminatedUnion('type', [stringCheck, textSimilarity, scoreModel, labelModel, python, multi]);

export type StringCheckConfig = z.infer<typeof stringCheck>;
export type TextSimilarityConfig = z.infer<typeof textSimilarity>;
export type ScoreModelConfig = z.infer<typeof scoreModel>;
export type LabelModelConfig = z.infer<typeof labelModel>;
export type MultiConfig = z.infer<typeof multi>;
export type PythonConfig = z.infer<typeof python>;
export type GraderConfig = z.infer<typeof graderSchema>;
export type ModelMessage = z.infer<typeof message>;

function pathOf(parts: ReadonlyArray<PropertyKey>): string {
  return parts.map(String).join('.');
}

/** Refuses unknown types first, with a clearer message than the union's. */
function checkTypes(json: unknown, at: string[]): void {
  if (json === null || typeof json !== 'object' || Array.isArray(json)) return;
  const obj = json as Record<string, unknown>;
  const type = obj.type;
  if (typeof type !== 'string' || !(GRADER_TYPES as readonly string[]).includes(type)) {
    throw errors.graderConfig(pathOf([...at, 'type']), `unknown grader type ${JSON.stringify(type)}; expected one of ${GRADER_TYPES.join(', ')}`);
  }
  if (type === 'multi' && obj.graders !== null && typeof obj.graders === 'object') {
    for (const [key, sub] of Object.entries(obj.graders as Record<string, unknown>)) checkTypes(sub, [...at, 'graders', key]);
  }
}

function checkTemplate(text: string, at: string): void {
  if (text.replace(/\{\{\s*([^{}]*?)\s*\}\}/g, '').includes('{{')) {
    throw errors.graderConfig(at, 'template has an unclosed "{{"');
  }
  for (const p of templatePaths(text)) {
    if (!/^(item|sample)(\.|\[|$)/.test(p)) throw errors.graderConfig(at, `template path {{${p}}} must start with item or sample`);
    const field = /^sample\.([^.[]+)/.exec(p)?.[1];
    if (p.startsWith('sample') && !(SAMPLE_FIELDS as readonly string[]).includes(field ?? '')) {
      throw errors.graderConfig(at, `template path {{${p}}} must name a sample field: ${SAMPLE_FIELDS.join(', ')}`);
    }
  }
}

function checkMessages(input: ModelMessage[], at: string): void {
  input.forEach((m, i) => {
    if (typeof m.content === 'string') checkTemplate(m.content, `${at}.${i}.content`);
    else m.content.forEach((part, j) => checkTemplate(part.text, `${at}.${i}.content.${j}.text`));
  });
}

/** What zod cannot say: templates, formulas, label sets. */
function checkSemantics(g: GraderConfig, at: string[]): void {
  const p = (field: string) => pathOf([...at, field]);
  switch (g.type) {
    case 'string_check':
    case 'text_similarity':
      checkTemplate(g.input, p('input'));
      checkTemplate(g.reference, p('reference'));
      return;
    case 'score_model':
      checkMessages(g.input, p('input'));
      return;
    case 'label_model': {
      checkMessages(g.input, p('input'));
      const stray = g.passing_labels.find((l) => !g.labels.includes(l));
      if (stray !== undefined) throw errors.graderConfig(p('passing_labels'), `"${stray}" is not one of labels`);
      return;
    }
    case 'python':
      return;
    case 'multi': {
      const keys = Object.keys(g.graders);
      if (keys.length === 0) throw errors.graderConfig(p('graders'), 'a multi grader needs at least one sub-grader');
      try {
        parseFormula(g.calculate_output, keys);
      } catch (e) {
        throw errors.graderConfig(p('calculate_output'), e instanceof Error ? e.message : String(e));
      }
      for (const [key, sub] of Object.entries(g.graders)) checkSemantics(sub, [...at, 'graders', key]);
      return;
    }
  }
}

/** Validates an OpenAI grader config; throws RFT_ERR_GRADER_CONFIG (with `path`) or RFT_ERR_GRADER_UNSUPPORTED. */
export function validateGraderConfig(json: unknown): GraderConfig {
  if (json === null || typeof json !== 'object' || Array.isArray(json)) {
    throw errors.graderConfig('', 'a grader config must be a JSON object');
  }
  checkTypes(json, []);
  const parsed = graderSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    if (!issue) throw errors.graderConfig('', 'invalid grader config');
    const keys = issue.code === 'unrecognized_keys' ? issue.keys : [];
    const at = pathOf([...issue.path, ...keys.slice(0, 1)]);
    const msg = issue.code === 'unrecognized_keys' ? `unknown field${keys.length > 1 ? 's' : ''} ${keys.join(', ')}` : issue.message;
    throw errors.graderConfig(at, msg);
  }
  checkSemantics(parsed.data, []);
  return parsed.data;
}
