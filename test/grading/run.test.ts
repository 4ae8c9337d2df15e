import { describe, expect, it } from 'vitest';
import { validateGraderConfig } from '../../src/grading/config.js';
import { runErrorReply, runGraderConfig } from '../../src/grading/run.js';
import { rejected } from '../helpers/codes.js';

const sample = (output_text: string | null) => ({ output_text, output_json: null, output_tools: [] });
const item = { reference_answer: 'Paris', alias: 'paris, France' };
const check = (operation: string, input = '{{sample.output_text}}', reference = '{{item.reference_answer}}') =>
  validateGraderConfig({ type: 'string_check', name: 'sc', input, reference, operation });

describe('string_check', () => {
  it.each([
    ['eq', 'Paris', 1],
    ['eq', 'paris', 0],
    ['ne', 'Lyon', 1],
    ['ne', 'Paris', 0],
    ['like', 'It is Paris.', 1],
    ['like', 'It is paris.', 0],
    ['ilike', 'It is PARIS.', 1],
    ['ilike', 'It is Lyon.', 0],
  ])('%s on %j gives %d', async (op, answer, expected) => {
    const r = await runGraderConfig(check(op), sample(answer), item);
    expect(r.reward).toBe(expected);
  });

  it('treats a null output_text as the empty string', async () => {
    expect((await runGraderConfig(check('eq', '{{sample.output_text}}', ''), sample(null), item)).reward).toBe(1);
  });

  it('fails with RFT_ERR_TEMPLATE_PATH when the item lacks the referenced field', async () => {
    const e = await rejected(runGraderConfig(check('eq'), sample('Paris'), {}));
    expect(e.code).toBe('RFT_ERR_TEMPLATE_PATH');
    expect(e.details).toEqual({ path: 'item.reference_answer' });
  });
});

describe('text_similarity', () => {
  const sim = (metric: string, pass_threshold?: number) =>
    validateGraderConfig({
      type: 'text_similarity',
      name: 'sim',
      input: '{{sample.output_text}}',
      reference: '{{item.reference_answer}}',
      evaluation_metric: metric,
      ...(pass_threshold !== undefined ? { pass_threshold } : {}),
    });

  it('rewards the similarity itself', async () => {
    // fuzzy: "Pari" vs "Paris", LCS 4, 8/9
    const r = await runGraderConfig(sim('fuzzy_match'), sample('Pari'), item);
    expect(r.reward).toBeCloseTo(8 / 9, 12);
    expect(r.metadata.scores).toEqual({ sim: r.reward });
  });

  it('reports passed in the scores against pass_threshold without changing the reward', async () => {
    const high = await runGraderConfig(sim('fuzzy_match', 0.9), sample('Pari'), item);
    expect(high.reward).toBeCloseTo(8 / 9, 12);
    expect(high.metadata.scores['sim.passed']).toBe(false);
    const low = await runGraderConfig(sim('fuzzy_match', 0.8), sample('Pari'), item);
    expect(low.metadata.scores['sim.passed']).toBe(true);
  });

  it('runs rouge_l on the rendered texts', async () => {
    // [paris, france] vs [paris]: LCS 1, P 1/2, R 1, F 2/3
    const r = await runGraderConfig(sim('rouge_l'), sample('Paris, France'), item);
    expect(r.reward).toBeCloseTo(2 / 3, 12);
  });
});

describe('multi', () => {
  const combo = (calculate_output: string) =>
    validateGraderConfig({
      type: 'multi',
      name: 'combo',
      graders: {
        exact: { type: 'string_check', name: 'exact', input: '{{sample.output_text}}', reference: '{{item.reference_answer}}', operation: 'eq' },
        fuzzy: { type: 'text_similarity', name: 'fuzzy', input: '{{sample.output_text}}', reference: '{{item.reference_answer}}', evaluation_metric: 'fuzzy_match' },
        mentions: { type: 'string_check', name: 'mentions', input: '{{sample.output_text}}', reference: 'paris', operation: 'ilike' },
      },
      calculate_output,
    });

  it('combines sub-rewards with the formula and reports them', async () => {
    // "Pari": exact 0, fuzzy 8/9, mentions 0 -> 0.5*0 + 0.3*8/9 + 0.2*0
    const r = await runGraderConfig(combo('0.5 * exact + 0.3 * fuzzy + 0.2 * mentions'), sample('Pari'), item);
    expect(r.reward).toBeCloseTo(0.3 * (8 / 9), 12);
    expect(r.sub_rewards).toEqual({ exact: 0, fuzzy: 8 / 9, mentions: 0 });
    expect(r.metadata.scores).toEqual(r.sub_rewards);
  });

  it('answers in the shape of OpenAI graders/run', async () => {
    const r = await runGraderConfig(combo('max(exact, fuzzy)'), sample('Paris'), item);
    expect(r.reward).toBe(1);
    expect(r.metadata).toMatchObject({ name: 'combo', type: 'multi', token_usage: null, sampled_model_name: null });
    expect(r.model_grader_token_usage_per_model).toEqual({});
    expect(Object.values(r.metadata.errors).every((v) => v === false || v === null)).toBe(true);
    expect(r.metadata.execution_time).toBeGreaterThanOrEqual(0);
    expect(r.metadata.execution_time).toBeLessThan(5);
  });

  it('fails with RFT_ERR_FORMULA when the formula divides by a zero sub-reward', async () => {
    const e = await rejected(runGraderConfig(combo('fuzzy / exact'), sample('Pari'), item));
    expect(e.code).toBe('RFT_ERR_FORMULA');
    expect(e.details).toEqual({ position: 6 });
  });
});

describe('runErrorReply', () => {
  it('maps a thrown error to OpenAI error flags with reward 0', async () => {
    const cfg = check('eq');
    const err = await rejected(runGraderConfig(cfg, sample('x'), {}));
    const reply = runErrorReply(cfg, err);
    expect(reply.reward).toBe(0);
    expect(reply.metadata.errors.invalid_variable_error).toBe(true);
    expect(reply.metadata.errors.other_error).toBe(false);
  });

  it('sets other_error for an error it does not know', () => {
    expect(runErrorReply({ name: 'n', type: 'multi' }, new Error('boom')).metadata.errors.other_error).toBe(true);
  });
});
