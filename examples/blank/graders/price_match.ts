// The blank project's grader, to replace with your own: partial credit for the last number of the
// answer against the row's `reference_answer`, times a multiplier for the tool calls it took.
import { defineGrader, errors, z } from 'rft-endpoints';
import { budgetPenalty, extractNumbers, numericCloseness } from 'rft-endpoints/grading';

export default defineGrader({
  name: 'price_match',
  description: 'Closeness of the final figure to reference_answer (1% tolerance), fewer tool calls preferred.',
  itemSchema: z.looseObject({ reference_answer: z.number(), target_calls: z.number().int().min(0).optional() }),
  async handler({ sample, item }, ctx) {
    const expected = Number(item.reference_answer);
    if (!Number.isFinite(expected)) throw errors.badRequest('item.reference_answer must be a number');
    const last = extractNumbers(sample.output_text ?? '').at(-1);
    const answer = last ? numericCloseness(last.value, expected, { relTol: 0.01 }) : 0;
    const budget = budgetPenalty(await ctx.rollout.budget(), { target: Number(item.target_calls ?? 2), floor: 0.5 });
    return { score: answer * budget, subscores: { answer, budget }, explanation: `answer ${answer}, budget x${budget}` };
  },
});
