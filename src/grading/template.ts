// OpenAI grader templates: "{{item.reference_answer}}", "{{sample.output_json.x}}", ... An `item`
// path that does not resolve is an error, never an empty string: a silently empty reference would
// make every answer "match" (string_check ne, like "") or score 0 for reasons nobody sees, and it is
// the dataset's mistake (dataset check finds it). A `sample` path is the model's answer: when the
// answer lacks it (no final text, output_json not an object), it renders as "" and the grader scores
// that, since refusing would answer 500 and let a model turn a bad answer into a discarded rollout
// instead of a low score. Which sample fields a template may name is checked when the config loads.
//
// Paths start at `item` or `sample`; segments are separated by dots; array elements are reached
// with a number segment or brackets (`item.answers.0`, `item.answers[0]`). Strings render as they
// are, numbers and booleans with String(), null as "null", objects and arrays as JSON.
import { errors } from '../errors.js';
import type { Item, Sample } from '../protocol/wire.js';

const PLACEHOLDER = /\{\{\s*([^{}]*?)\s*\}\}/g;

export interface TemplateScope {
  sample: Sample;
  item: Item;
}

function segments(path: string): string[] | null {
  const out: string[] = [];
  for (const part of path.split('.')) {
    const m = /^([^[\]]*)((?:\[\d+\])*)$/.exec(part);
    if (!m || (m[1] === '' && !m[2])) return null;
    if (m[1]) out.push(m[1]);
    for (const idx of (m[2] ?? '').matchAll(/\[(\d+)\]/g)) out.push(idx[1] ?? '');
  }
  return out;
}

/** The fields of the trainer's sample a template may name (sample.<field>...). */
export const SAMPLE_FIELDS = ['output_text', 'output_json', 'output_tools', 'choices'] as const;

/**
 * The value at `path` ("item.a.b", "sample.output_text"). A path that cannot be a template path, or
 * an `item` path that does not resolve, throws RFT_ERR_TEMPLATE_PATH; a `sample` path that the
 * model's answer does not have is "" (see the header).
 */
export function resolvePath(path: string, scope: TemplateScope): unknown {
  const segs = segments(path);
  const root = segs?.[0];
  if (!segs || (root !== 'item' && root !== 'sample')) throw errors.templatePath(path);
  let cur: unknown = root === 'item' ? scope.item : scope.sample;
  const missing = (): string => {
    if (root === 'sample') return '';
    throw errors.templatePath(path);
  };
  for (const seg of segs.slice(1)) {
    if (Array.isArray(cur) && /^\d+$/.test(seg)) cur = cur[Number(seg)];
    else if (cur !== null && typeof cur === 'object' && !Array.isArray(cur) && Object.hasOwn(cur, seg)) {
      cur = (cur as Record<string, unknown>)[seg];
    } else return missing();
  }
  if (cur === undefined || (root === 'sample' && cur === null)) return missing();
  return cur;
}

function show(value: unknown): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return JSON.stringify(value);
}

/** Replaces every {{path}} in `template`; text outside placeholders is kept verbatim. */
export function renderTemplate(template: string, scope: TemplateScope): string {
  // A "{{" outside any complete placeholder was never closed (or holds nested braces): refuse it
  // rather than compare against half-rendered text.
  const rest = template.replace(PLACEHOLDER, '');
  const open = rest.indexOf('{{');
  if (open !== -1) throw errors.templatePath(rest.slice(open + 2, open + 82));
  return template.replace(PLACEHOLDER, (_m, path: string) => show(resolvePath(path, scope)));
}

/** The paths a template refers to, for validation at load time. */
export function templatePaths(template: string): string[] {
  return [...template.matchAll(PLACEHOLDER)].map((m) => m[1] ?? '');
}
