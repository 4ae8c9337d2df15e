// The Agent RFT wire formats (see ../shared/docs/agent-rft-wire.md). Schemas accept what the
// trainer documents and a little more (object `arguments`, missing `id`), never less.
import { z } from 'zod';

export const traceIdSchema = z.string().min(1).max(200);

export const functionCallSchema = z.looseObject({
  type: z.literal('function_call').optional(),
  id: z.string().max(200).optional(),
  call_id: z.string().min(1).max(200),
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
    (body.id === undefined || isStr(body.id, 0, 200)) &&
    isStr(body.call_id, 1, 200) &&
    (body.name === undefined || isStr(body.name, 1, 128)) &&
    (body.arguments === undefined || typeof body.arguments === 'string' || isRecord(body.arguments)) &&
    isStr(body.trace_id, 1, 200) &&
    (body.item === undefined || body.item === null || isRecord(body.item))
  ) {
    return { success: true, data: body as FunctionCall };
  }
  return functionCallSchema.safeParse(body);
}

export interface FunctionCallOutput {
  type: 'function_call_output';
  call_id: string;
  id?: string;
  output: string;
}

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
