// An Agent RFT dataset row in the row formats of TRL, verl, slime and OpenRLHF. Each keeps the
// conversation as a chat message list (`prompt`: role and text content, what their loaders hand to
// the tokenizer's chat template) and carries what this server's door for that trainer grades with:
// - TRL (OpenEnv door): the row's split and index, which `reset(split, index)` names to the door, and
//   the row's other fields as columns (TRL passes them to reset and to reward functions);
// - slime, OpenRLHF (reward door) and verl (the reward door, from a custom reward function): the
//   row's other fields as one JSON text, the label (verl: `reward_model.ground_truth`), which
//   POST /reward/{grader} takes as the grader's item. Text, not an object: their loaders read JSON
//   into Arrow columns (datasets, parquet), which give every row every key another row has (as null)
//   and refuse a key whose type differs between rows.
// Anything these formats cannot hold is refused with the reason, rather than trained on wrongly.
import { RowProblem, textParts } from './nemo-gym-row.js';

type Obj = Record<string, unknown>;
const isObject = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v);

export interface ChatMessage {
  role: string;
  content: string;
}

/** The row's conversation as role + text messages; `target` names the format in the refusals. */
export function chatPrompt(messages: unknown, target: string): ChatMessage[] {
  if (!Array.isArray(messages) || messages.length === 0) throw new RowProblem('"messages" must be a non-empty array');
  return messages.map((m, i) => {
    const where = `messages[${i}]`;
    if (!isObject(m) || typeof m.role !== 'string') throw new RowProblem(`${where} has no "role"`);
    if (!['system', 'developer', 'user', 'assistant'].includes(m.role)) {
      throw new RowProblem(`${where} has role "${m.role}": ${target}'s prompt holds system, developer, user and assistant text messages`);
    }
    if (m.tool_calls !== undefined && m.tool_calls !== null && !(Array.isArray(m.tool_calls) && m.tool_calls.length === 0)) {
      throw new RowProblem(`${where} calls tools: ${target}'s prompt holds text messages only`);
    }
    return { role: m.role, content: textParts(m.content, where) };
  });
}

/** The row's fields other than the conversation and its tools: the grader's item, as every door gives it. */
export function gradingFields(row: Obj): Obj {
  const { messages: _m, tools: _t, ...fields } = row;
  return fields;
}

function objectRow(row: unknown): Obj {
  if (!isObject(row)) throw new RowProblem('a row must be a JSON object');
  return row;
}

/**
 * The reward door grades an answer with the label as its item and no rollout: a row whose grader
 * reads the rollout's sandbox (coding's hidden tests run on the workspace the model changed) cannot be
 * graded there, and would train on the template's score.
 */
function refuseSandbox(fields: Obj, target: string): void {
  if (fields.sandbox !== undefined) {
    throw new RowProblem(`the row names a sandbox: its grader reads the rollout's workspace, which ${target} (graded by the reward door, with no rollout) never has`);
  }
}

export interface SlimeRow {
  prompt: ChatMessage[];
  label: string;
}

/** slime (`--input-key prompt --label-key label --apply-chat-template`) and OpenRLHF (`--data.input_key prompt --data.label_key label`). */
export function toLabelRow(row: unknown, target: string): SlimeRow {
  const r = objectRow(row);
  const fields = gradingFields(r);
  refuseSandbox(fields, target);
  return { prompt: chatPrompt(r.messages, target), label: JSON.stringify(fields) };
}

export interface VerlRow {
  data_source: string;
  prompt: ChatMessage[];
  ability: string;
  reward_model: { style: 'rule'; ground_truth: string };
  extra_info: { index: number };
}

/** verl's RLHFDataset row; `index` is the row's place in the file (extra_info.index, as verl's own preprocessing sets it). */
export function toVerlRow(row: unknown, opts: { dataSource: string; index: number }): VerlRow {
  const r = objectRow(row);
  const fields = gradingFields(r);
  refuseSandbox(fields, 'verl');
  return {
    data_source: opts.dataSource,
    prompt: chatPrompt(r.messages, 'verl'),
    ability: 'agent',
    reward_model: { style: 'rule', ground_truth: JSON.stringify(fields) },
    extra_info: { index: opts.index },
  };
}

/**
 * Columns TRL's GRPOTrainer reads itself (`prompt`, `completion`, `image`/`images`, `environment` picking
 * the environment factory) or that the row's door address takes (`split`, `index`).
 */
const TRL_RESERVED = new Set(['prompt', 'completion', 'image', 'images', 'environment', 'split', 'index']);

/** The kind of a JSON value as an Arrow column holds it: one per column. */
export function columnKind(v: unknown): string | undefined {
  if (v === null) return undefined;
  if (Array.isArray(v)) return 'list';
  return typeof v === 'object' ? 'object' : typeof v;
}

export interface TrlRow {
  prompt: ChatMessage[];
  split: string;
  index: number;
  [field: string]: unknown;
}

/** TRL's row: the door's address of the row (split, index in that split) and its fields as columns. */
export function toTrlRow(row: unknown, opts: { split: string; index: number }): TrlRow {
  const r = objectRow(row);
  const fields = gradingFields(r);
  for (const k of Object.keys(fields)) {
    if (TRL_RESERVED.has(k)) throw new RowProblem(`the row has a field "${k}", a column TRL or the OpenEnv door's address takes (${[...TRL_RESERVED].join(', ')})`);
  }
  return { prompt: chatPrompt(r.messages, 'TRL'), split: opts.split, index: opts.index, ...fields };
}
