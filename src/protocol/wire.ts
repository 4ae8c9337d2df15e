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
