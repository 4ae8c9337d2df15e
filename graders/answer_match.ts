// Partial-credit grader for short factual answers (the finqa example): numeric answers within a
// relative tolerance, short text answers by words and fuzzy match, times a budget multiplier so a
// correct answer found with fewer tool calls scores higher. Details of each part live in
// graders/_lib/ (answer-text, score-number, score-text).
import { defineGrader, errors, z } from 'rft-endpoints';
import { budgetPenalty, parseNumber } from 'rft-endpoints/grading';
import { answerText, questionText } from './_lib/answer-text.js';
import { scoreNumber } from './_lib/score-number.js';
import { scoreText } from './_lib/score-text.js';
import { sourceVersion } from './_lib/source-version.js';

/** Relative tolerance of numeric answers when the row gives none: figures in the reports are exact. */
export const DEFAULT_TOLERANCE = 0.001;
/** Budget units (tool calls) that cost nothing when the row gives no `target_calls`. */
export const DEFAULT_TARGET_CALLS = 6;
/** The lowest budget multiplier: a right answer found the long way still beats a wrong one. */
export const BUDGET_FLOOR = 0.2;

export default defineGrader({
  name: 'answer_match',
  version: sourceVersion(import.meta.url, ['./answer_match', './_lib/answer-text', './_lib/score-number', './_lib/score-text']),
  description:
    'Compares the answer (output_json.answer, else the last "Answer:" line, else output_text) with item.reference_answer: ' +
    'numbers within item.tolerance (relative, default 0.1%) decaying to 0 at 10x, text by words and fuzzy match; ' +
    'times a budget multiplier (1 up to item.target_calls budget units, then linear down to 0.2 at the budget limit).',
  itemSchema: z.looseObject({
    reference_answer: z.union([z.string().min(1), z.number()]),
    answer_type: z.enum(['number', 'text']).optional(),
    tolerance: z.number().min(0).optional(),
    aliases: z.array(z.string()).optional(),
    target_calls: z.number().min(0).optional(),
  }),
  async handler({ sample, item }, ctx) {
    const reference = item.reference_answer;
    if (typeof reference !== 'string' && typeof reference !== 'number') {
      throw errors.graderConfig('item.reference_answer', 'missing: answer_match needs a string (or number) reference answer');
    }
    const ref = String(reference);
    const declared = item.answer_type;
    const type = declared === 'text' || declared === 'number' ? declared : parseNumber(ref) ? 'number' : 'text';
    const question = questionText(item);
    const answer = answerText(sample);

    let answerScore: number;
    let why: string;
    if (type === 'number') {
      const tol = item.tolerance;
      const tolerance = typeof tol === 'number' && tol >= 0 ? tol : DEFAULT_TOLERANCE;
      const r = scoreNumber(answer.text, ref, { tolerance, question });
      answerScore = r.score;
      why = r.why;
    } else {
      const aliases = item.aliases;
      const refs = [ref, ...(Array.isArray(aliases) ? aliases.filter((a): a is string => typeof a === 'string') : [])];
      const r = scoreText(answer.text, refs, question);
      answerScore = r.score;
      why = r.why;
    }

    const usage = await ctx.rollout.budget();
    const target = item.target_calls;
    const budget = budgetPenalty(usage, {
      target: typeof target === 'number' && target >= 0 ? target : DEFAULT_TARGET_CALLS,
      floor: BUDGET_FLOOR,
    });
    return {
      score: answerScore * budget,
      subscores: { answer: answerScore, budget },
      explanation: `${type} answer from ${answer.source}: ${why}; budget ${usage.used}/${usage.limit} -> x${budget.toFixed(2)}`,
    };
  },
});
