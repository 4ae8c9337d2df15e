// Which failures the Postgres store repeats once (src/store/pg-retry.ts).
import { describe, expect, it } from 'vitest';
import { isTransient, retryOnce } from '../../src/store/pg-retry.js';

const pgError = (code: string) => Object.assign(new Error(`sqlstate ${code}`), { code });

describe('isTransient', () => {
  it('repeats broken connections, cancelled statements, rollbacks and an exhausted server', () => {
    for (const e of [new Error('Connection terminated unexpectedly'), pgError('ECONNRESET'), pgError('08006'), pgError('57P01'), pgError('57014'), pgError('40001'), pgError('53300')]) {
      expect(isTransient(e), e.message).toBe(true);
    }
  });

  it('does not repeat integrity, data or syntax errors, nor errors of the program itself', () => {
    for (const e of [pgError('23505'), pgError('22P02'), pgError('42P01'), new TypeError('x is undefined'), new Error('Cannot use a pool after calling end on the pool')]) {
      expect(isTransient(e), e.message).toBe(false);
    }
  });
});

describe('retryOnce', () => {
  it('tries a transient failure once more and no more', async () => {
    let n = 0;
    await expect(retryOnce(async () => { n++; throw pgError('08006'); })).rejects.toThrow('08006');
    expect(n).toBe(2);
  });

  it('gives up at once on a failure that would fail again', async () => {
    let n = 0;
    await expect(retryOnce(async () => { n++; throw pgError('23505'); })).rejects.toThrow('23505');
    expect(n).toBe(1);
  });
});
