// The Agent RFT wire formats (see ../shared/docs/agent-rft-wire.md). Schemas accept what the
// trainer documents and a little more (object `arguments`, missing `id`), never less.
import { z } from 'zod';

/**
 * The longest `trace_id`, `call_id` and `id` accepted, in characters (UTF-16 units, as JSON and
 * JavaScript count them). The router serves path parameters up to the same length, so every
 * accepted id can be named in a URL (GET, DELETE, regrade /v1/rollouts/{trace_id}).
 */
export const ID_MAX_LENGTH = 200;
// No control characters (ids are printed in logs, terminals and reports) and no lone surrogates
// (they cannot be percent-encoded into a URL, so such an id could never be served).
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const ID_UNFIT = /[\u0000-\u001f\u007f]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

export function isId(v: unknown, minLength = 1): v is string {
  return typeof v === 'string' && v.length >= minLength && v.length <= ID_MAX_LENGTH && !ID_UNFIT.test(v);
}

const idSchema = (minLength: number) =>
  z
    .string()
    .min(minLength)
    .max(ID_MAX_LENGTH)
    .refine((v) => !ID_UNFIT.test(v), 'must not contain control characters or unpaired surrogates');

export const traceIdSchema = idSchema(1);

export const functionCallSchema = z.looseObject({
  type: z.literal('function_call').optional(),
  id: idSchema(0).optional(),
  call_id: idSchema(1),
  name: z.string().min(1).max(128).optional(),
  arguments: z.union([z.string(), z.record(z.string(), z.unknown())]).optional(),
  trace_id: traceIdSchema,
  item: z.record(z.string(), z.unknown()).nullish(),
});
export type FunctionCall = z.infer<typeof functionCallSchema>;

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isStr = (v: unknown, min: number, max: number): v is string => typeof v === 'string' && v.length >= min && v.length <= max;

/**
 * The hot path's check of a function_call body: accepts exactly what functionCallSchema accepts
 * (a subset is enough: anything it refuses goes through the schema, which words the error), without
 * zod copying the body and its item. Returns the body itself, not a copy.
 */
export function parseFunctionCall(body: unknown): { success: true; data: FunctionCall } | ReturnType<typeof functionCallSchema.safeParse> {
  if (
    isRecord(body) &&
    (body.type === undefined || body.type === 'function_call') &&
    (body.id === undefined || isId(body.id, 0)) &&
    isId(body.call_id) &&
    (body.name === undefined || isStr(body.name, 1, 128)) &&
    (body.arguments === undefined || typeof body.arguments === 'string' || isRecord(body.arguments)) &&
    isId(body.trace_id) &&
    (body.item === undefined || body.item === null || isRecord(body.item))
  ) {
    return { success: true, data: body as FunctionCall };
  }
  return functionCallSchema.safeParse(body);
}

export const functionCallOutputSchema = z.object({
  type: z.literal('function_call_output'),
  call_id: z.string(),
  id: z.string().optional(),
  output: z.string().describe("what the model reads: the tool's result, or its error in words"),
});
export type FunctionCallOutput = z.infer<typeof functionCallOutputSchema>;

export const toolCallSchema = z.looseObject({
  id: z.string().optional(),
  type: z.string().optional(),
  function: z.looseObject({ name: z.string(), arguments: z.string().optional() }).optional(),
});

export const sampleSchema = z.looseObject({
  output_text: z.string().nullish(),
  output_json: z.unknown().optional(),
  output_tools: z.array(toolCallSchema).nullish(),
  choices: z.array(z.unknown()).nullish(),
});
export type Sample = z.infer<typeof sampleSchema>;

export const gradeRequestSchema = z.looseObject({
  sample: sampleSchema,
  item: z.record(z.string(), z.unknown()).nullish(),
  trace_id: traceIdSchema.optional(),
});
export type GradeRequest = z.infer<typeof gradeRequestSchema>;

export type Item = Record<string, unknown>;
