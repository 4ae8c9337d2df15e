import { describe, expect, it } from 'vitest';
import { perturbations } from '../../src/grading/perturb.js';

describe('perturbations', () => {
  const ps = perturbations('Revenue was $4.2 million, up 12.5%');
  const text = (what: string) => ps.find((p) => p.what === what)?.text;

  it('scales every number', () => {
    expect(text('numbers x1.5')).toBe('Revenue was $6.3 million, up 18.75%');
    expect(text('last digit changed')).toBe('Revenue was $4.3 million, up 12.6%');
  });

  it('changes words and units', () => {
    expect(text('last word dropped')).toBe('Revenue was $4.2 million, up');
    expect(text('million -> billion')).toBe('Revenue was $4.2 billion, up 12.5%');
    expect(text('$ -> €')).toBe('Revenue was €4.2 million, up 12.5%');
  });

  it('never repeats a text, the reference or the empty answer', () => {
    const texts = ps.map((p) => p.text);
    expect(new Set(texts).size).toBe(texts.length);
    expect(texts).not.toContain('Revenue was $4.2 million, up 12.5%');
    expect(perturbations('yes').map((p) => p.text)).not.toContain('');
  });
});
