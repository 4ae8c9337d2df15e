// `rft-endpoints dataset check`: what the trainer and this server will make of a dataset file,
// before a job is paid for. Every problem names its line and a code (README, "dataset check").
import { isUtf8 } from 'node:buffer';
import { z } from 'zod';
import type { AppConfig } from '../../config.js';
import { toolBudgetProblem } from '../../rollout/budget.js';
import { canonicalJson } from '../../protocol/canonical.js';
import { jsonDepthExceeds } from '../../protocol/json-depth.js';
import { templatePaths } from '../../grading/template.js';
import { readInputBytes } from '../files.js';

/**
 * The trainer's minimum row count for a training file. OpenAI's fine-tuning guide requires at least
 * 10 examples (Azure OpenAI's fine-tuning docs say the same); the reinforcement fine-tuning guides
 * state no figure of their own, so the same 10 applies. Validation files have no documented minimum.
 */
export const MIN_TRAINING_ROWS = 10;

/** The trainer's request limit (1 MB): the row travels as `item` in every tool and grader call. */
export const REQUEST_LIMIT_BYTES = 1_048_576;
/** Room left in a request for the call's own fields (arguments, sample) next to the row. */
const CALL_HEADROOM_BYTES = 65_536;

export const CODES = {
  notJson: 'RFT_DATASET_NOT_JSON',
  notObject: 'RFT_DATASET_NOT_OBJECT',
  messages: 'RFT_DATASET_MESSAGES',
  lastNotUser: 'RFT_DATASET_LAST_NOT_USER',
  noTools: 'RFT_DATASET_NO_TOOLS',
  toolShape: 'RFT_DATASET_TOOL_SHAPE',
  toolUnknown: 'RFT_DATASET_TOOL_UNKNOWN',
  toolSchema: 'RFT_DATASET_TOOL_SCHEMA',
  toolDuplicate: 'RFT_DATASET_TOOL_DUPLICATE',
  toolBudget: 'RFT_DATASET_TOOL_BUDGET',
  toolBudgetZero: 'RFT_DATASET_TOOL_BUDGET_ZERO',
  graderField: 'RFT_DATASET_GRADER_FIELD',
  rowSize: 'RFT_DATASET_ROW_SIZE',
  rowDepth: 'RFT_DATASET_ROW_DEPTH',
  notUtf8: 'RFT_DATASET_NOT_UTF8',
  rowCount: 'RFT_DATASET_ROW_COUNT',
} as const;

export interface Problem {
  /** 1-based line of the file; 0 for the file as a whole. */
  line: number;
  code: string;
  message: string;
  /** Warnings are printed but do not fail the check. */
  warning?: boolean;
}

export interface GraderNeeds {
  name: string;
  /** `item.*` paths the grader's templates read (OpenAI grader configs). */
  paths: string[];
  /** The grader's declared itemSchema (TypeScript graders). */
  schema?: z.ZodType;
}

/** The server's intake limits, from its config (RFT_BODY_LIMIT_BYTES, RFT_MAX_JSON_DEPTH). */
export type IntakeLimits = Pick<AppConfig, 'bodyLimitBytes' | 'maxJsonDepth'>;

export interface CheckInput {
  file: string;
  limits: IntakeLimits;
  /** The server's tools: name -> JSON Schema of the parameters. */
  tools: Map<string, unknown>;
  grader?: GraderNeeds;
  /** Rows the file must hold (MIN_TRAINING_ROWS for a training file, 1 for a validation file). */
  minRows: number;
}

export interface CheckReport {
  file: string;
  rows: number;
  rowsWithProblems: number;
  problems: Problem[];
  ok: boolean;
}

/** `item.*` paths named by the templates anywhere in an OpenAI grader config. */
export function itemPathsOfConfig(config: unknown): string[] {
  const found = new Set<string>();
  const walk = (v: unknown) => {
    if (typeof v === 'string') {
      for (const p of templatePaths(v)) if (p === 'item' || p.startsWith('item.') || p.startsWith('item[')) found.add(p);
    } else if (Array.isArray(v)) {
      v.forEach(walk);
    } else if (v && typeof v === 'object') {
      Object.values(v).forEach(walk);
    }
  };
  walk(config);
  return [...found];
}

function resolves(path: string, item: Record<string, unknown>): boolean {
  let cur: unknown = { item };
  for (const seg of path.replace(/\[(\d+)\]/g, '.$1').split('.')) {
    if (Array.isArray(cur) && /^\d+$/.test(seg)) cur = cur[Number(seg)];
    else if (cur !== null && typeof cur === 'object' && !Array.isArray(cur) && Object.hasOwn(cur, seg)) cur = (cur as Record<string, unknown>)[seg];
    else return false;
  }
  return cur !== undefined;
}

function valueAt(row: Record<string, unknown>, path: readonly PropertyKey[]): unknown {
  let cur: unknown = row;
  for (const k of path) cur = cur !== null && typeof cur === 'object' ? (cur as Record<PropertyKey, unknown>)[k] : undefined;
  return cur;
}

const chatTool = z.object({
  type: z.literal('function'),
  function: z.looseObject({ name: z.string().min(1), parameters: z.record(z.string(), z.unknown()).optional() }),
});

function checkTools(row: Record<string, unknown>, input: CheckInput, add: (code: string, message: string) => void): void {
  if (row.tools === undefined) {
    if (input.tools.size > 0) add(CODES.noTools, `no "tools": the model could call none of the server's tools (${[...input.tools.keys()].join(', ')})`);
    return;
  }
  if (!Array.isArray(row.tools)) return add(CODES.toolShape, '"tools" must be an array of {type: "function", function: {name, parameters}}');
  const seen = new Set<string>();
  row.tools.forEach((t, i) => {
    const parsed = chatTool.safeParse(t);
    if (!parsed.success) return add(CODES.toolShape, `tools[${i}] is not {type: "function", function: {name, parameters}} (Chat Completions format)`);
    const { name, parameters } = parsed.data.function;
    if (seen.has(name)) add(CODES.toolDuplicate, `tool "${name}" is listed twice`);
    seen.add(name);
    if (!input.tools.has(name)) {
      return add(CODES.toolUnknown, `tool "${name}" is not served (the server has: ${[...input.tools.keys()].join(', ') || 'no tools'})`);
    }
    const served = input.tools.get(name);
    if (canonicalJson(parameters ?? null) !== canonicalJson(served)) {
      add(CODES.toolSchema, `tool "${name}": parameters differ from the server's schema at ${firstDifference(parameters ?? null, served, 'parameters')}; copy them from GET /v1/tools`);
    }
  });
}

function checkRow(row: unknown, input: CheckInput, add: (code: string, message: string, warning?: boolean) => void): void {
  if (!row || typeof row !== 'object' || Array.isArray(row)) return add(CODES.notObject, 'a row must be a JSON object');
  const r = row as Record<string, unknown>;
  const messages = r.messages;
  if (!Array.isArray(messages) || messages.length === 0) add(CODES.messages, '"messages" must be a non-empty array');
  else if (!messages.every((m) => m && typeof m === 'object' && typeof (m as { role?: unknown }).role === 'string')) {
    add(CODES.messages, 'every message needs a "role"');
  } else {
    const last = (messages.at(-1) as { role: string }).role;
    if (last !== 'user') add(CODES.lastNotUser, `the last message is "${last}": the trainer needs the conversation to end with a user message`);
  }
  checkTools(r, input, add);
  const budget = toolBudgetProblem(r);
  if (budget) add(CODES.toolBudget, `${budget}; the server would run the rollout on its default budget`);
  else if (r.tool_budget === 0) add(CODES.toolBudgetZero, 'tool_budget 0: no tool call of this row can run', true);
  const g = input.grader;
  if (g) {
    for (const p of g.paths) if (!resolves(p, r)) add(CODES.graderField, `grader "${g.name}" reads {{${p}}}, which this row does not have`);
    if (g.schema) {
      const parsed = g.schema.safeParse(r);
      if (!parsed.success) {
        for (const issue of parsed.error.issues.slice(0, 3)) {
          const path = ['item', ...issue.path.map(String)].join('.');
          const missing = valueAt(r, issue.path) === undefined;
          add(CODES.graderField, `grader "${g.name}" reads ${path}: ${missing ? 'missing from this row' : issue.message}`);
        }
      }
    }
  }
}

/** The lines of a file as bytes, split on LF (a CR before it stays, as JSON.parse accepts it). */
function linesOf(bytes: Buffer): Buffer[] {
  const lines: Buffer[] = [];
  let at = 0;
  for (let nl = bytes.indexOf(0x0a); nl !== -1; nl = bytes.indexOf(0x0a, at)) {
    lines.push(bytes.subarray(at, nl));
    at = nl + 1;
  }
  lines.push(bytes.subarray(at));
  return lines;
}

/**
 * The server's own intake checks on the row as it travels: inside every tool and grader body as
 * `item`, one level below the top, so the body is what json-body.ts measures. A row these refuse
 * gets a 400 on each of its calls, which the trainer shows the model. true: the row may go on.
 */
function checkIntake(bytes: Buffer, text: string, limits: IntakeLimits, add: (code: string, message: string) => void): boolean {
  const limit = Math.min(REQUEST_LIMIT_BYTES, limits.bodyLimitBytes) - CALL_HEADROOM_BYTES;
  if (bytes.length > limit) {
    add(
      CODES.rowSize,
      `the row is ${bytes.length} bytes; it travels as "item" in every call, within the request limit ` +
        `(${limits.bodyLimitBytes} bytes on this server, RFT_BODY_LIMIT_BYTES; ${REQUEST_LIMIT_BYTES} at the trainer) less ${CALL_HEADROOM_BYTES} for the call's own fields`,
    );
  }
  if (jsonDepthExceeds(`{"item":${text}}`, limits.maxJsonDepth)) {
    add(
      CODES.rowDepth,
      `the row nests arrays and objects more than ${limits.maxJsonDepth - 1} levels deep: as "item" its calls' bodies exceed ` +
        `the server's ${limits.maxJsonDepth} (RFT_MAX_JSON_DEPTH), and each answers 400 RFT_ERR_BODY_TOO_DEEP`,
    );
    // The row checks below walk it recursively; the server would never get that far either.
    return false;
  }
  return true;
}

export function checkDataset(input: CheckInput): CheckReport {
  const problems: Problem[] = [];
  let rows = 0;
  const bad = new Set<number>();
  linesOf(readInputBytes(input.file, 'dataset')).forEach((bytes, i) => {
    const text = bytes.toString('utf8');
    if (text.trim() === '') return;
    rows++;
    const line = i + 1;
    const add = (code: string, message: string, warning = false) => {
      problems.push({ line, code, message, ...(warning ? { warning } : {}) });
      if (!warning) bad.add(line);
    };
    if (!isUtf8(bytes)) {
      // The server reads bodies as UTF-8 (json-body.ts), replacing what is not, silently.
      add(CODES.notUtf8, 'the line is not valid UTF-8: its bad bytes would reach the server, its graders and the model as U+FFFD');
    }
    let row: unknown;
    try {
      row = JSON.parse(text);
    } catch (e) {
      return add(CODES.notJson, `not JSON: ${(e as Error).message}`);
    }
    if (checkIntake(bytes, text, input.limits, add)) checkRow(row, input, add);
  });
  if (rows < input.minRows) {
    problems.push({ line: 0, code: CODES.rowCount, message: `${rows} rows; the trainer needs at least ${input.minRows} in a training file` });
  }
  return { file: input.file, rows, rowsWithProblems: bad.size, problems, ok: !problems.some((p) => !p.warning) };
}

export function renderReport(r: CheckReport, sources: string): string {
  const lines = r.problems.map((p) => `${r.file}${p.line > 0 ? `:${p.line}` : ''}: ${p.warning ? 'warning ' : ''}${p.code} ${p.message}`);
  const errors = r.problems.filter((p) => !p.warning).length;
  const warnings = r.problems.length - errors;
  lines.push(
    `${r.file}: ${r.rows} rows, ${r.rows - r.rowsWithProblems} ok, ${r.rowsWithProblems} with problems; ` +
      `${errors} problem${errors === 1 ? '' : 's'}, ${warnings} warning${warnings === 1 ? '' : 's'} (${sources})`,
  );
  return lines.join('\n') + '\n';
}

/**
 * Where two JSON values first differ, as a path with what each side holds there (the row's first, then the
 * server's): `parameters.properties.extra (the row has {"type":"string"}, the server none)`.
 */
export function firstDifference(row: unknown, served: unknown, path: string): string {
  const show = (v: unknown) => (v === undefined ? 'none' : JSON.stringify(v).slice(0, 80));
  const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null;
  if (Array.isArray(row) && Array.isArray(served)) {
    for (let i = 0; i < Math.max(row.length, served.length); i++) {
      if (canonicalJson(row[i] ?? null) !== canonicalJson(served[i] ?? null) || (i < row.length) !== (i < served.length)) return firstDifference(row[i], served[i], `${path}[${i}]`);
    }
  } else if (isObject(row) && isObject(served) && !Array.isArray(row) && !Array.isArray(served)) {
    for (const k of [...new Set([...Object.keys(row), ...Object.keys(served)])].sort()) {
      if (!(k in row) || !(k in served) || canonicalJson(row[k]) !== canonicalJson(served[k])) return firstDifference(row[k], served[k], `${path}.${k}`);
    }
  }
  return `${path} (the row has ${show(row)}, the server ${show(served)})`;
}
