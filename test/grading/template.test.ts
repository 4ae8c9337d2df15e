import { describe, expect, it } from 'vitest';
import { renderTemplate, resolvePath } from '../../src/grading/template.js';
import { thrown } from '../helpers/codes.js';

const scope = {
  item: { reference_answer: '4.2', meta: { source: { page: 7 } }, answers: ['a', 'b'], flag: true, nothing: null },
  sample: {
    output_text: 'Revenue was $4.2M',
    output_json: { x: 3, nested: { y: 'z' } },
    output_tools: [{ id: 'call_1', type: 'function', function: { name: 'search_docs', arguments: '{}' } }],
  },
};

describe('templates', () => {
  it('renders item and sample fields inside surrounding text', () => {
    expect(renderTemplate('Q: {{item.reference_answer}} / A: {{ sample.output_text }}', scope)).toBe('Q: 4.2 / A: Revenue was $4.2M');
  });

  it('follows nested object paths', () => {
    expect(renderTemplate('{{item.meta.source.page}}', scope)).toBe('7');
    expect(renderTemplate('{{sample.output_json.nested.y}}', scope)).toBe('z');
  });

  it('indexes arrays with dots or brackets', () => {
    expect(renderTemplate('{{item.answers.1}}|{{item.answers[0]}}', scope)).toBe('b|a');
  });

  it('serializes objects and arrays as JSON', () => {
    expect(renderTemplate('{{sample.output_tools}}', scope)).toBe(JSON.stringify(scope.sample.output_tools));
    expect(renderTemplate('{{sample.output_json}}', scope)).toBe('{"x":3,"nested":{"y":"z"}}');
  });

  it('renders booleans and null as JSON literals', () => {
    expect(renderTemplate('{{item.flag}} {{item.nothing}}', scope)).toBe('true null');
  });

  it('keeps text without placeholders verbatim', () => {
    expect(renderTemplate('plain { text } here', scope)).toBe('plain { text } here');
  });

  it.each([
    ['item.missing'],
    ['item.meta.source.line'],
    ['item.answers.5'],
    ['item.answers.x'],
    ['other.thing'],
    ['item..a'],
    ['item.nothing.deeper'],
  ])('refuses the missing path %s instead of rendering ""', (path) => {
    const e = thrown(() => renderTemplate(`{{${path}}}`, scope));
    expect(e.code).toBe('RFT_ERR_TEMPLATE_PATH');
    expect(e.details).toEqual({ path });
  });

  it.each([
    ['sample.output_json.nested.y.z', scope.sample],
    ['sample.output_json.x', { output_text: 'not json', output_json: null }],
    ['sample.output_json.x', { output_text: 'no json at all' }],
    ['sample.output_text', { output_text: null }],
    ['sample.output_text', {}],
    ['sample.output_tools.0.function.name', { output_tools: [] }],
  ])('renders %s as "" when the model\'s answer lacks it (a low score, never a discarded rollout)', (path, sample) => {
    expect(renderTemplate(`[{{${path}}}]`, { item: scope.item, sample })).toBe('[]');
  });

  it('refuses an unclosed placeholder', () => {
    expect(thrown(() => renderTemplate('answer {{item.reference_answer', scope)).code).toBe('RFT_ERR_TEMPLATE_PATH');
  });

  it('does not reach inherited properties', () => {
    expect(thrown(() => resolvePath('item.constructor', scope)).code).toBe('RFT_ERR_TEMPLATE_PATH');
  });
});
