import { describe, expect, it } from 'vitest';
import { validateGraderConfig } from '../../src/grading/config.js';
import { thrown } from '../helpers/codes.js';

const exact = { type: 'string_check', name: 'exact', input: '{{sample.output_text}}', reference: '{{item.reference_answer}}', operation: 'eq' };
const fuzzy = { type: 'text_similarity', name: 'fuzzy', input: '{{sample.output_text}}', reference: '{{item.reference_answer}}', evaluation_metric: 'fuzzy_match' };
const judge = {
  type: 'score_model',
  name: 'judge',
  model: 'gpt-4o-mini',
  input: [{ role: 'user', content: 'Grade {{sample.output_text}}' }],
  range: [0, 10],
  sampling_params: { temperature: 0, seed: 1 },
};
const multi = { type: 'multi', name: 'combo', graders: { exact, fuzzy }, calculate_output: '0.9 * exact + 0.1 * fuzzy' };

function pathOf(json: unknown): unknown {
  const e = thrown(() => validateGraderConfig(json));
  expect(e.code).toBe('RFT_ERR_GRADER_CONFIG');
  return e.details?.path;
}

describe('validateGraderConfig', () => {
  it('accepts each documented grader type', () => {
    for (const g of [exact, fuzzy, judge, multi]) expect(validateGraderConfig(g)).toEqual(g);
    const label = { type: 'label_model', name: 'l', model: 'm', input: [{ role: 'system', content: [{ type: 'input_text', text: 'x' }] }], labels: ['good', 'bad'], passing_labels: ['good'] };
    expect(validateGraderConfig(label)).toEqual(label);
  });

  it('points at a bad enum value inside a multi grader', () => {
    expect(pathOf({ ...multi, graders: { exact: { ...exact, operation: 'equals' }, fuzzy } })).toBe('graders.exact.operation');
  });

  it('points at a misspelt field', () => {
    expect(pathOf({ ...exact, operator: 'eq' })).toBe('operator');
  });

  it('points at a missing required field', () => {
    const { reference: _r, ...noRef } = exact;
    expect(pathOf(noRef)).toBe('reference');
  });

  it('points at an unknown type', () => {
    expect(pathOf({ ...multi, graders: { exact: { ...exact, type: 'regex' } } })).toBe('graders.exact.type');
  });

  it('points at an unknown metric', () => {
    expect(pathOf({ ...fuzzy, evaluation_metric: 'rouge_6' })).toBe('evaluation_metric');
  });

  it('points at a bad range and at a bad sampling parameter', () => {
    expect(pathOf({ ...judge, range: [10, 0] })).toBe('range');
    expect(pathOf({ ...judge, sampling_params: { temperature: 5 } })).toBe('sampling_params.temperature');
  });

  it('refuses a template naming a sample field the trainer never sends (a typo would render as an empty answer)', () => {
    expect(pathOf({ ...exact, input: '{{sample.output_txt}}' })).toBe('input');
    expect(pathOf({ ...exact, input: '{{sample}}' })).toBe('input');
    expect(validateGraderConfig({ ...exact, input: '{{sample.output_json.answer}}' })).toBeTruthy();
  });

  it('points at a message role it does not know', () => {
    expect(pathOf({ ...judge, input: [{ role: 'tool', content: 'x' }] })).toBe('input.0.role');
  });

  it('refuses a calculate_output naming an unknown sub-grader, with the formula position', () => {
    const e = thrown(() => validateGraderConfig({ ...multi, calculate_output: 'exact + rouge' }));
    expect(e.details).toEqual({ path: 'calculate_output' });
    expect(e.message).toContain('position 8');
  });

  it('refuses sub-grader keys that cannot appear in a formula', () => {
    expect(pathOf({ ...multi, graders: { 'my-key': exact } })).toBe('graders.my-key');
  });

  it('refuses passing labels outside the labels', () => {
    expect(pathOf({ type: 'label_model', name: 'l', model: 'm', input: [{ role: 'user', content: 'x' }], labels: ['a'], passing_labels: ['b'] })).toBe(
      'passing_labels',
    );
  });

  it('refuses template paths outside item and sample, and unclosed placeholders', () => {
    expect(pathOf({ ...exact, reference: '{{reference_answer}}' })).toBe('reference');
    expect(pathOf({ ...judge, input: [{ role: 'user', content: 'x {{sample.output_text' }] })).toBe('input.0.content');
  });

  it('accepts python graders, also nested, and refuses an unknown field in one', () => {
    const py = { type: 'python', name: 'p', source: 'def grade(sample, item): return 1.0' };
    for (const g of [py, { ...multi, graders: { exact, fuzzy: py } }]) expect(validateGraderConfig(g).type).toBe(g.type);
    expect(thrown(() => validateGraderConfig({ ...py, sourcecode: 'x' })).code).toBe('RFT_ERR_GRADER_CONFIG');
  });

  it('refuses a value that is not an object', () => {
    expect(pathOf([exact])).toBe('');
  });
});
