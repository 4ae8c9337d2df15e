// Gym's row and episode shapes (NVIDIA-NeMo/Gym nemo_gym/base_resources_server.py, simple_agent
// app.py): the row is `responses_create_params` (Responses `input` and flat function tools) plus
// the grader's fields; /verify adds `response`, a Responses object whose `output` is the episode.
import { z } from 'zod';
import type { Item } from '../../protocol/wire.js';

/** A flat Responses function tool: {type: 'function', name, parameters, ...}. */
const gymToolSchema = z.looseObject({ type: z.literal('function'), name: z.string().min(1).max(128) });

/** /seed_session's body: a row, strictly enough that a model's tool call named seed_session is not one. */
export const seedBodySchema = z.looseObject({
  responses_create_params: z.looseObject({
    input: z.union([z.string(), z.array(z.unknown())]),
    tools: z.array(z.unknown()).nullish(),
  }),
});
export type SeedBody = z.infer<typeof seedBodySchema>;

/** /verify's body: the row again with the episode (`response.output`). */
export const verifyBodySchema = seedBodySchema.extend({
  response: z.looseObject({ output: z.array(z.looseObject({ type: z.string() })) }),
});
export type VerifyBody = z.infer<typeof verifyBodySchema>;

/** The function tools the row offers the model (other tool types, e.g. web search, are not ours to serve). */
export function rowTools(body: SeedBody): string[] {
  return (body.responses_create_params.tools ?? []).flatMap((t) => {
    const parsed = gymToolSchema.safeParse(t);
    return parsed.success ? [parsed.data.name] : [];
  });
}

/** Fields Gym adds to a row for its own bookkeeping, not the grader's. */
const GYM_FIELDS = new Set(['responses_create_params', 'agent_ref']);

/** The grader's item and the record's row: the row without what only Gym reads (its `_ng_*` ids are kept, they name the rollout). */
export function graderItem(body: SeedBody): Item {
  return Object.fromEntries(Object.entries(body).filter(([k]) => !GYM_FIELDS.has(k)));
}

interface OutputText {
  type?: unknown;
  text?: unknown;
}

/** The answer a grader sees: the text of the episode's last assistant message (the core parses it: DoorCore.answer). */
export function answerOf(body: VerifyBody): string {
  const last = body.response.output.findLast((o) => o.type === 'message' && (o as { role?: unknown }).role === 'assistant');
  const content = (last as { content?: unknown } | undefined)?.content;
  const text = Array.isArray(content)
    ? content
        .filter((c: OutputText) => c && (c.type === 'output_text' || c.type === 'text') && typeof c.text === 'string')
        .map((c: OutputText) => c.text as string)
        .join('')
    : typeof content === 'string'
      ? content
      : '';
  return text;
}

