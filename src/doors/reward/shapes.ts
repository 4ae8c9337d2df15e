// The two reward-only clients' request shapes, read as their files send them:
// - slime `slime/rollout/rm_hub/__init__.py` remote_rm: {"prompt": str | [messages], "response": str, "label": any}, one sample;
// - OpenRLHF `openrlhf/utils/agent.py` SingleTurnAgentExecutor._fetch_rewards_via_http:
//   {"query": [prompt + response decoded with its special tokens], "prompts": [prompt], "labels": [label]}.
// Each becomes (answer, grader item): the label is the item when it is (or parses as) a JSON object,
// else the item's `reference_answer`.
import { z } from 'zod';
import { errors } from '../../errors.js';
import type { Item } from '../../protocol/wire.js';

const slimeSchema = z.looseObject({
  prompt: z.union([z.string(), z.array(z.unknown())]).nullish(),
  response: z.string(),
  label: z.unknown().optional(),
});
const openRlhfSchema = z.looseObject({
  query: z.array(z.string()).min(1),
  prompts: z.array(z.string()),
  labels: z.array(z.unknown()),
});

export interface RewardRequest {
  client: 'slime' | 'openrlhf';
  /** One per sample, in the request's order: the answer's text (the core parses it) and the grader's item. */
  samples: { answer: string; item: Item }[];
}

/** The grader's item of a label: a JSON object (or its text) as is; anything else is the reference answer; none is an empty item. */
export function itemOfLabel(label: unknown): Item {
  if (label === null || label === undefined) return {};
  if (isObject(label)) return label;
  if (typeof label === 'string' && label.trimStart().startsWith('{')) {
    try {
      const parsed: unknown = JSON.parse(label);
      if (isObject(parsed)) return parsed;
    } catch {
      // not JSON: a reference answer that starts with a brace
    }
  }
  return { reference_answer: label };
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Special tokens a decoded query ends with (skip_special_tokens=False keeps the EOS: `<|im_end|>`,
 * `<|endoftext|>`, `<|eot_id|>`, `</s>`, `<eos>`, `<end_of_turn>`, DeepSeek's `<｜end▁of▁sentence｜>`).
 */
const TRAILING_SPECIAL = /(?:<\|[^|<>\s]{1,40}\|>|<｜[^｜<>]{1,40}｜>|<\/s>|<eos>|<end_of_turn>)\s*$/;

/**
 * The response in OpenRLHF's query: what follows the prompt. The executor may have cut the prompt's
 * tokens from the left to fit max_len, so the query then starts with a tail of the prompt: the longest
 * tail of the prompt the query starts with is cut (a prefix function over query + sentinel + prompt).
 */
export function responseOf(query: string, prompt: string): string | undefined {
  let rest: string;
  if (query.startsWith(prompt)) rest = query.slice(prompt.length);
  else {
    const overlap = longestTailPrefix(prompt, query);
    if (overlap === 0) return undefined;
    rest = query.slice(overlap);
  }
  for (let m = TRAILING_SPECIAL.exec(rest); m; m = TRAILING_SPECIAL.exec(rest)) rest = rest.slice(0, m.index);
  return rest;
}

/** Length of the longest suffix of `a` that is a prefix of `b`. */
function longestTailPrefix(a: string, b: string): number {
  // KMP prefix function of b + \u0000 + a: its last value is the overlap (capped by b's length).
  const s = `${b}\u0000${a}`;
  const pi = new Int32Array(s.length);
  for (let i = 1; i < s.length; i++) {
    let k = pi[i - 1]!;
    while (k > 0 && s[i] !== s[k]) k = pi[k - 1]!;
    if (s[i] === s[k]) k++;
    pi[i] = k;
  }
  return Math.min(pi[s.length - 1] ?? 0, b.length);
}

export function parseRewardRequest(body: unknown): RewardRequest {
  // OpenRLHF's shape needs `query`: without it that parse (and its error object) is skipped.
  const o = isObject(body) && 'query' in body ? openRlhfSchema.safeParse(body) : undefined;
  if (o?.success) {
    const { query, prompts, labels } = o.data;
    if (prompts.length !== query.length || labels.length !== query.length) {
      throw errors.badRequest(`OpenRLHF's query, prompts and labels must be as long as each other (${query.length}, ${prompts.length}, ${labels.length})`);
    }
    return {
      client: 'openrlhf',
      samples: query.map((q, i) => {
        const response = responseOf(q, prompts[i]!);
        if (response === undefined) throw errors.badRequest(`query ${i} does not hold its prompt, so its response cannot be told apart`, { index: i });
        return { answer: response, item: itemOfLabel(labels[i]) };
      }),
    };
  }
  const s = slimeSchema.safeParse(body);
  if (s.success) return { client: 'slime', samples: [{ answer: s.data.response, item: itemOfLabel(s.data.label) }] };
  throw errors.badRequest("the body is neither slime's {prompt, response, label} nor OpenRLHF's {query, prompts, labels}");
}
