// Which dataset row a reset names, and what of it the model may see. OpenEnv's reset takes `seed`
// (an int >= 0) and `episode_id` (a string of at most 255) and any other field (huggingface/OpenEnv
// src/openenv/core/env_server/types.py ResetRequest, extra="allow"): here `split` and `index` name the
// row; without an index, the seed picks it (the same seed, the same row), else the episode id (the same
// id, the same row), else chance. The observation carries the prompt and the tools' schemas, never
// the row's other fields: those are what the grader reads (reference answers, hidden tests).
import { createHash, randomInt } from 'node:crypto';
import { z } from 'zod';
import { errors } from '../../errors.js';
import { canonicalSplit } from '../../environments/dataset.js';
import type { Environments, Row, SplitName } from '../../environments/environment.js';

export const SUBMIT_TOOL = 'submit';

/** An OpenEnv tool (mcp_types.py Tool): what list_tools and the reset observation show. */
export interface ToolSpec {
  name: string;
  description: string;
  input_schema: Record<string, unknown>;
}

export const SUBMIT_SPEC: ToolSpec = {
  name: SUBMIT_TOOL,
  description: 'Submit your final answer. The episode ends and the answer is graded; no tool can be called after it.',
  input_schema: { type: 'object', properties: { answer: { type: 'string', description: 'Your final answer' } }, required: ['answer'] },
};

export const resetSchema = z.looseObject({
  // A split is named after its file (train.jsonl, hard.jsonl); valid is validation.
  split: z.string().min(1).max(64).optional(),
  index: z.number().int().min(0).optional(),
  seed: z.number().int().min(0).nullish(),
  episode_id: z.string().max(255).nullish(),
});
export type ResetData = z.infer<typeof resetSchema>;

export interface PickedRow {
  split: SplitName;
  index: number;
  row: Row;
}

/** The rows a reset names, as the environment's files hold them now (they are read again when they change). */
export class RowSource {
  constructor(private readonly environments: Environments) {}

  async pick(env: string, data: ResetData): Promise<PickedRow> {
    const split = canonicalSplit(data.split ?? 'train');
    const rows = await this.environments.rows(env, split);
    if (rows.length === 0) throw errors.badRequest(`split "${split}" of environment "${env}" has no rows`);
    let index: number;
    if (data.index !== undefined) index = data.index;
    else if (typeof data.seed === 'number') index = data.seed % rows.length;
    else if (typeof data.episode_id === 'string') index = createHash('sha256').update(data.episode_id).digest().readUInt32BE(0) % rows.length;
    else index = randomInt(rows.length);
    const row = rows[index];
    if (!row) throw errors.badRequest(`index ${index} is outside split "${split}" of environment "${env}" (${rows.length} rows)`, { rows: rows.length });
    return { split, index, row };
  }
}

interface RowTool {
  type?: unknown;
  function?: { name?: unknown; description?: unknown; parameters?: unknown };
}

/** The row's function tools as OpenEnv tools (Agent RFT rows carry Chat Completions' {type, function}). */
export function rowToolSpecs(row: Row): ToolSpec[] {
  const tools = Array.isArray(row.tools) ? (row.tools as RowTool[]) : [];
  return tools.flatMap((t) => {
    const f = t?.function;
    if (!f || typeof f.name !== 'string') return [];
    const schema = f.parameters && typeof f.parameters === 'object' ? (f.parameters as Record<string, unknown>) : { type: 'object', properties: {} };
    return [{ name: f.name, description: typeof f.description === 'string' ? f.description : '', input_schema: schema }];
  });
}

/** What the grader gets as `item` (and the record keeps): the row without its prompt and tool schemas, as Agent RFT sends it. */
export function graderItem(row: Row): Row {
  const { messages: _m, tools: _t, ...item } = row;
  return item;
}

interface Message {
  role?: unknown;
  content?: unknown;
}

const textOf = (content: unknown): string =>
  typeof content === 'string'
    ? content
    : Array.isArray(content)
      ? content.map((c: { text?: unknown }) => (typeof c?.text === 'string' ? c.text : '')).join('')
      : '';

/** The prompt: the row's messages (system and user turns) and the same as one text, for trainers that append it to a turn. */
export function promptOf(row: Row): { messages: { role: string; content: string }[]; prompt: string } {
  const messages = (Array.isArray(row.messages) ? (row.messages as Message[]) : []).map((m) => ({
    role: typeof m?.role === 'string' ? m.role : 'user',
    content: textOf(m?.content),
  }));
  return { messages, prompt: messages.map((m) => m.content).join('\n\n') };
}
