// What the ORS door shows of an environment: its splits, its tasks (rows by index), a row's prompt
// and its tools with the submit tool. A task spec names its row and nothing else (split, index and
// the row's id): the grader's fields (reference answers, hidden tests, the sandbox's paths) are
// never in it, and a task spec sent back to /create is only an address, never the grader's item.
import { z } from 'zod';
import { errors } from '../../errors.js';
import { canonicalSplit } from '../../environments/dataset.js';
import type { Environment, Environments, Row } from '../../environments/environment.js';
import type { Registry } from '../../registry/loader.js';

/** ORS's split types are train, validation and test: a split of another name (hard.jsonl) is a test split. */
const typeOf = (split: string): 'train' | 'validation' | 'test' => (split === 'train' || split === 'validation' ? split : 'test');

/** The splits its folder holds now (every *.jsonl, src/environments/dataset.ts). */
export function splitsOf(env: Environment): { name: string; type: 'train' | 'validation' | 'test' }[] {
  return env.dataset.splits().map((s) => ({ name: s, type: typeOf(s) }));
}

export function splitName(env: Environment, split: string): string {
  const found = splitsOf(env).find((s) => s.name === canonicalSplit(split));
  if (!found) throw errors.badRequest(`environment "${env.name}" has no split "${split}" (it has: ${splitsOf(env).map((s) => s.name).join(', ') || 'none'})`);
  return found.name;
}

export async function rowAt(environments: Environments, env: string, split: string, index: number): Promise<Row> {
  const rows = await environments.rows(env, splitName(environments.get(env), split));
  const row = Number.isInteger(index) && index >= 0 ? rows[index] : undefined;
  if (!row) throw errors.badRequest(`index ${index} is outside split "${split}" of "${env}" (${rows.length} tasks)`);
  return row;
}

/** A row's task spec: its address and id only. */
export function taskSpec(split: string, index: number, row: Row): Record<string, unknown> {
  const id = typeof row.id === 'string' || typeof row.id === 'number' ? row.id : typeof row.task_id === 'string' ? row.task_id : undefined;
  return { split, index, ...(id !== undefined ? { id } : {}) };
}

/** The address a task spec sent to /create gives (anything else in it is ignored). */
export const taskSpecAddress = z.looseObject({ split: z.string().min(1).max(64), index: z.number().int().min(0) });

interface Message {
  role?: unknown;
  content?: unknown;
}

function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .flatMap((p: { type?: unknown; text?: unknown }) => (p && typeof p.text === 'string' && (p.type === 'text' || p.type === 'input_text') ? [p.text] : []))
    .join('');
}

/**
 * A text block as the reference servers serialize it (TextBlock: `text`, `detail`, `type`, every field written):
 * the `openreward` SDK reads `block["detail"]` and fails on a block without it.
 */
export interface TextBlock {
  type: 'text';
  text: string;
  detail: null;
}
export const textBlock = (text: string): TextBlock => ({ type: 'text', text, detail: null });

/** The prompt: the row's messages as text blocks, one per message (system first, as the row has them). */
export function promptOf(row: Row): TextBlock[] {
  const messages = Array.isArray(row.messages) ? (row.messages as Message[]) : [];
  return messages.map((m) => contentText(m?.content)).filter((t) => t !== '').map(textBlock);
}

/** The tools a row offers (its Chat Completions `tools`), else every tool of its environment. */
export function rowTools(row: Row, env: Environment): string[] {
  const listed = Array.isArray(row.tools)
    ? (row.tools as { type?: unknown; name?: unknown; function?: { name?: unknown } }[]).flatMap((t) => {
        const name = t?.function?.name ?? t?.name;
        return typeof name === 'string' ? [name] : [];
      })
    : [];
  return listed.length > 0 ? listed : [...env.tools];
}

export interface ToolSpec {
  name: string;
  description: string;
  input_schema: Record<string, unknown> | null;
}

export function submitSpec(name: string): ToolSpec {
  return {
    name,
    description: 'Submit your final answer. This ends the episode: the answer is graded and no tool can be called after it.',
    input_schema: { type: 'object', properties: { answer: { type: 'string', description: 'Your final answer.' } }, required: ['answer'], additionalProperties: false },
  };
}

export function toolSpecs(registry: Registry, names: readonly string[], submit: string): { tools: ToolSpec[] } {
  const tools = names.flatMap((n) => {
    const t = registry.tools.get(n);
    return t ? [{ name: n, description: t.def.description, input_schema: t.parameters }] : [];
  });
  return { tools: [...tools, submitSpec(submit)] };
}
