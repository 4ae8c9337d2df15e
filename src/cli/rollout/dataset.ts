// Agent RFT dataset rows (JSONL): `messages` and `tools` in Chat Completions format, plus any field
// the grader reads. The whole row is what the trainer sends as `item`.
import { z } from 'zod';
import { errors } from '../../errors.js';
import { forEachJsonLine, readInputFile } from '../files.js';

const chatToolSchema = z.looseObject({
  type: z.literal('function'),
  function: z.looseObject({
    name: z.string().min(1),
    description: z.string().optional(),
    parameters: z.record(z.string(), z.unknown()).optional(),
    strict: z.boolean().nullish(),
  }),
});
export type ChatTool = z.infer<typeof chatToolSchema>;

const messageSchema = z.looseObject({ role: z.string(), content: z.unknown().optional() });
export type DatasetMessage = z.infer<typeof messageSchema>;

const rowSchema = z.looseObject({
  messages: z.array(messageSchema).min(1),
  tools: z.array(chatToolSchema).optional(),
});
export type DatasetRow = z.infer<typeof rowSchema>;

export function readDataset(file: string): DatasetRow[] {
  const rows: DatasetRow[] = [];
  forEachJsonLine(file, readInputFile(file, 'dataset'), (value, line) => {
    const row = rowSchema.safeParse(value);
    if (!row.success) throw errors.dataset(file, line, z.prettifyError(row.error).replace(/\n/g, '; '));
    rows.push(row.data);
  });
  if (rows.length === 0) throw errors.dataset(file, 0, 'no rows');
  return rows;
}

export interface ResponsesFunctionTool {
  type: 'function';
  name: string;
  description?: string;
  parameters: Record<string, unknown> | null;
  strict: boolean;
}

/** Chat Completions `{type, function:{...}}` to the Responses API's flat function tool. */
export function toResponsesTool(t: ChatTool): ResponsesFunctionTool {
  return {
    type: 'function',
    name: t.function.name,
    ...(t.function.description !== undefined ? { description: t.function.description } : {}),
    parameters: t.function.parameters ?? null,
    // Responses defaults to strict schemas, which most dataset schemas were not written for.
    strict: t.function.strict ?? false,
  };
}
