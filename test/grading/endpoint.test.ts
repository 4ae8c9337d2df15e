import { describe, expect, it } from 'vitest';
import { validateGraderConfig } from '../../src/grading/config.js';
import { configVersion, graderFromConfig } from '../../src/grading/endpoint.js';
import type { GraderContext } from '../../src/registry/define.js';
import { comboGraderConfig } from '../helpers/fixtures.js';

const config = validateGraderConfig(comboGraderConfig);

// The handler of a config grader only reads ctx.signal; the rest of the context is not reached.
const ctx = { signal: new AbortController().signal } as unknown as GraderContext;

describe('graderFromConfig', () => {
  it('serves reward as score and sub_rewards as subscores', async () => {
    const g = graderFromConfig(config);
    const r = await g.handler({ sample: { output_text: 'Pari' }, item: { reference_answer: 'Paris' }, traceId: 'trace_1' }, ctx);
    expect(r).toMatchObject({ score: 0.5 * (8 / 9), subscores: { exact: 0, fuzzy: 8 / 9 } });
  });

  it('takes the endpoint name from the options, else from the config', () => {
    expect(graderFromConfig(config).name).toBe('combo');
    expect(graderFromConfig(config, { name: 'file_name' }).name).toBe('file_name');
  });

  it('versions by canonical content: key order does not matter, a changed field does', () => {
    const reordered = validateGraderConfig(JSON.parse(JSON.stringify({ calculate_output: config.type === 'multi' ? config.calculate_output : '', ...config })));
    expect(configVersion(reordered)).toBe(configVersion(config));
    const changed = validateGraderConfig({ ...config, calculate_output: '0.6 * exact + 0.4 * fuzzy' });
    expect(configVersion(changed)).not.toBe(configVersion(config));
    expect(graderFromConfig(config).version).toMatch(/^cfg-[0-9a-f]{16}$/);
  });
});
