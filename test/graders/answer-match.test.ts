import { describe, expect, it } from 'vitest';
import type { BudgetUsage, GraderResult, Item, Sample } from '../../src/index.js';
import answerMatch, { BUDGET_FLOOR, DEFAULT_TARGET_CALLS } from '../../graders/answer_match.js';
import { graderContext } from '../helpers/finqa-context.js';

const user = (question: string) => [{ role: 'user', content: question }];

async function grade(sample: Sample, item: Item, budget?: BudgetUsage): Promise<GraderResult> {
  const r = await answerMatch.handler({ sample, item, traceId: 'trace_test' }, graderContext(budget));
  if (typeof r === 'number') throw new Error('answer_match returns a result object');
  return r;
}

const text = (output_text: string, item: Item, budget?: BudgetUsage) => grade({ output_text }, item, budget);

// Hand-worked: default tolerance 0.1% gives 1; the score then falls linearly to 0 at 1% (10x).
const revenue = { reference_answer: '$51.7 million', messages: user("What was Halvorsen's final revenue for the second quarter of 2025?") };

describe('answer_match: numeric answers', () => {
  it.each([
    ['the exact figure', 'Answer: $51.7 million', 1],
    ['a bare number in the reference scale', 'Answer: 51.7', 1],
    ['the full number with commas', 'Answer: $51,700,000', 1],
    ['thousands, as in a filed table', 'Answer: 51,700 thousand', 1],
    ['a short scale suffix', 'Answer: $51.7M', 1],
    ['0.097% off, within the 0.1% tolerance', 'Answer: $51.75 million', 1],
    // 0.1934% off: (1% - 0.1934%) / (1% - 0.1%) = 0.8962
    ['0.19% off, partial credit', 'Answer: $51.8 million', 0.8962],
    ['the preliminary figure, 1.16% off', 'Answer: $52.3 million', 0],
    ['10% off', 'Answer: $56.87 million', 0],
    ['the right digits at a billion scale', 'Answer: $51.7 billion', 0],
    ['the right digits at a thousand scale', 'Answer: $51.7 thousand', 0],
  ])('%s: %s scores %d', async (_what, output, expected) => {
    expect((await text(output, revenue)).score).toBeCloseTo(expected, 4);
  });

  it('reads "$4.2M" as 4,200,000', async () => {
    expect((await text('Answer: $4.2M', { reference_answer: '4200000' })).score).toBe(1);
  });

  it('compares percents by their written value, and accepts a fraction for a percent', async () => {
    const item = { reference_answer: '6.2%', tolerance: 0.02 };
    expect((await text('Answer: 6.2%', item)).score).toBe(1);
    expect((await text('Answer: 6.19 percent', item)).score).toBe(1);
    expect((await text('Answer: 0.062', item)).score).toBe(1);
  });

  it('gives no credit for the right figure in another currency', async () => {
    expect((await text('Answer: €51.7 million', revenue)).score).toBe(0);
    expect((await text('Answer: 51.7 million USD', revenue)).score).toBe(1);
  });

  it('does not count a dollar amount as an answer to a percent question', async () => {
    expect((await text('Answer: $6.2 million', { reference_answer: '6.2%', tolerance: 0.02 })).score).toBe(0);
  });

  it.each([
    ['parentheses', 'Answer: (1.94) million'],
    ['parentheses with the scale outside', 'Answer: $(1,940) thousand'],
    ['a minus sign', 'Answer: -$1.94 million'],
    ['the word "loss"', 'Answer: an operating loss of $1.94 million'],
  ])('reads a negative written with %s', async (_what, output) => {
    expect((await text(output, { reference_answer: '-$1.94 million' })).score).toBe(1);
  });

  it('gives no credit for the wrong sign', async () => {
    expect((await text('Answer: $1.94 million', { reference_answer: '-$1.94 million' })).score).toBe(0);
  });

  it('uses the row tolerance when given', async () => {
    // 5.9 vs 46/7.8 = 5.897: 0.05% off; 6.2 is 5.1% off, past 10 x 0.2%.
    const item = { reference_answer: '5.9', tolerance: 0.02 };
    expect((await text('Answer: 5.9x', item)).score).toBe(1);
    // 6.2 vs 5.9: 5.08% off; tolerance 2%, zero at 20%: (0.2 - 0.0508) / (0.2 - 0.02) = 0.8286
    expect((await text('Answer: 6.2', item)).score).toBeCloseTo(0.8286, 3);
  });

  it('scores output_json.answer when present', async () => {
    const r = await grade({ output_text: 'see JSON', output_json: { answer: 51.7 } }, revenue);
    expect(r.score).toBe(1);
  });

  it('scores the last "Answer:" line, not the reasoning before it', async () => {
    const out = 'The preliminary estimate was $52.3 million, restated to $51.7 million.\nAnswer: $51.7 million';
    expect((await text(out, revenue)).score).toBe(1);
  });

  it('ignores dates and years, and numbers copied from the question', async () => {
    const item = { reference_answer: '1185', messages: user('How many full-time employees did Halvorsen have on 30 June 2025?') };
    expect((await text('On 30 June 2025 Halvorsen had 1,185 full-time employees.', item)).score).toBe(1);
  });
});

describe('answer_match: hard to game', () => {
  it('scores an empty answer 0', async () => {
    expect((await text('', revenue)).score).toBe(0);
    expect((await grade({}, revenue)).score).toBe(0);
  });

  it('scores "I don\'t know" 0', async () => {
    expect((await text("I don't know.", revenue)).score).toBe(0);
    expect((await text("I don't know", { reference_answer: 'Ingrid Solberg' })).score).toBe(0);
  });

  it('shares the credit of a shotgun list among its distinct numbers (1 right of 4 scores 1/4)', async () => {
    const r = await text('Answer: $48.6 million, $51.7 million, $52.3 million or $100.3 million', revenue);
    expect(r.score).toBe(0.25);
  });

  it('counts equal values written two ways once', async () => {
    expect((await text('Answer: $51.7 million (51,700 thousand)', revenue)).score).toBe(1);
  });

  it('gives nothing for restating the question', async () => {
    const item = { reference_answer: '1185', messages: user('How many full-time employees did Halvorsen have on 30 June 2025?') };
    expect((await text('Answer: How many full-time employees did Halvorsen have on 30 June 2025?', item)).score).toBe(0);
    const textItem = { reference_answer: 'Dry Creek', messages: user('Which Pellucid Energy project entered commercial operation in August 2025?') };
    expect((await text('Answer: the Pellucid Energy project that entered commercial operation in August 2025', textItem)).score).toBe(0);
  });
});

describe('answer_match: text answers', () => {
  const item = {
    reference_answer: 'Dry Creek',
    answer_type: 'text',
    messages: user('Which Pellucid Energy project entered commercial operation in August 2025?'),
  };

  it('accepts the name in any case and punctuation', async () => {
    expect((await text('Answer: dry creek.', item)).score).toBe(1);
  });

  it('accepts the name inside a sentence that restates the question', async () => {
    const out = 'The Pellucid Energy project that entered commercial operation in August 2025 was the Dry Creek project.';
    expect((await text(out, item)).score).toBe(1);
  });

  it('gives partial credit for a misspelling', async () => {
    // fuzzy_match("dry crek", "dry creek") = 16/17; credit (16/17 - 0.5) / 0.5 = 0.8824
    expect((await text('Answer: Dry Crek', item)).score).toBeCloseTo(0.8824, 4);
  });

  it('gives nothing for another name', async () => {
    expect((await text('Answer: Marlow Flats', item)).score).toBe(0);
  });

  it('gives a third for naming three candidates', async () => {
    // words: 2 of 6 are right (precision 1/3), both reference words found (recall 1)
    expect((await text('Answer: Dry Creek, Marlow Flats, Granite Rise', item)).score).toBeCloseTo(1 / 3, 6);
  });

  it('accepts an alias', async () => {
    const aliased = { reference_answer: 'Lumenward Data', aliases: ['Lumenward'] };
    expect((await text('Answer: Lumenward', aliased)).score).toBe(1);
    // without the alias: words give 1 x 1/2; fuzzy_match gives 18/23, credit (18/23 - 0.5) / 0.5 = 0.5652
    expect((await text('Answer: Lumenward', { reference_answer: 'Lumenward Data' })).score).toBeCloseTo(0.5652, 4);
  });

  it('treats a reference that is not a number as text when answer_type is missing', async () => {
    const r = await text('Answer: Ingrid Solberg', { reference_answer: 'Ingrid Solberg' });
    expect(r.score).toBe(1);
    expect(r.explanation).toMatch(/^text answer/);
  });
});

describe('answer_match: budget', () => {
  const item = { reference_answer: '$51.7 million' };
  const at = (used: number, exceeded = false) => text('Answer: $51.7 million', item, { used, limit: 12, exceeded });

  it(`gives full credit up to ${DEFAULT_TARGET_CALLS} calls`, async () => {
    expect((await at(0)).score).toBe(1);
    expect((await at(DEFAULT_TARGET_CALLS)).score).toBe(1);
  });

  it('decays linearly past the target to the floor at the limit', async () => {
    // 7 of 12 with target 6: 0.2 + 0.8 * (1 - 1/6) = 0.8667
    expect((await at(7)).score).toBeCloseTo(0.8667, 4);
    expect((await at(12)).score).toBeCloseTo(BUDGET_FLOOR, 10);
  });

  it('gives the floor when the budget was exceeded', async () => {
    expect((await at(12, true)).score).toBeCloseTo(BUDGET_FLOOR, 10);
  });

  it('uses the row target_calls and reports both subscores', async () => {
    const r = await text('Answer: $51.7 million', { ...item, target_calls: 4 }, { used: 5, limit: 12, exceeded: false });
    // 0.2 + 0.8 * (1 - 1/8) = 0.9
    expect(r.score).toBeCloseTo(0.9, 10);
    expect(r.subscores).toEqual({ answer: 1, budget: r.score });
  });

  it('multiplies a wrong answer by the budget and still gives 0', async () => {
    expect((await text('Answer: $52.3 million', item, { used: 1, limit: 12, exceeded: false })).score).toBe(0);
  });
});

describe('answer_match: bad rows', () => {
  it('fails with RFT_ERR_GRADER_CONFIG when the row has no reference_answer', async () => {
    await expect(text('Answer: 1', {})).rejects.toMatchObject({ code: 'RFT_ERR_GRADER_CONFIG' });
  });
});
