// The per-rollout admission batching the Postgres store uses (src/store/keyed-batcher.ts).
import { describe, expect, it } from 'vitest';
import { KeyedBatcher } from '../../src/store/keyed-batcher.js';

/** A batcher whose sends are recorded and complete only when released. */
function recorded(fail?: (inputs: number[]) => boolean) {
  const sends: { key: string; inputs: number[]; release: () => void }[] = [];
  const batcher = new KeyedBatcher<number, string>(
    (key, inputs) =>
      new Promise((resolve, reject) => {
        sends.push({ key, inputs, release: () => (fail?.(inputs) ? reject(new Error('send failed')) : resolve(inputs.map((i) => `${key}:${i}`))) });
      }),
    3,
  );
  return { batcher, sends };
}

const tick = () => new Promise((r) => setImmediate(r));

describe('KeyedBatcher', () => {
  it('sends the first input at once and what queued behind it as the next batch, in arrival order', async () => {
    const { batcher, sends } = recorded();
    const results = [1, 2, 3].map((i) => batcher.run('t', i));
    expect(sends.map((s) => s.inputs)).toEqual([[1]]);
    sends[0]!.release();
    await tick();
    expect(sends.map((s) => s.inputs)).toEqual([[1], [2, 3]]);
    sends[1]!.release();
    expect(await Promise.all(results)).toEqual(['t:1', 't:2', 't:3']);
  });

  it('never puts more than the maximum in one batch', async () => {
    const { batcher, sends } = recorded();
    const results = [1, 2, 3, 4, 5, 6].map((i) => batcher.run('t', i));
    for (let n = 0; n < 3; n++) {
      await tick();
      sends[n]!.release();
    }
    await Promise.all(results);
    expect(sends.map((s) => s.inputs)).toEqual([[1], [2, 3, 4], [5, 6]]);
  });

  it('does not make one key wait for another', async () => {
    const { batcher, sends } = recorded();
    void batcher.run('a', 1);
    const b = batcher.run('b', 2);
    expect(sends.map((s) => s.key)).toEqual(['a', 'b']);
    sends[1]!.release();
    expect(await b).toBe('b:2');
  });

  it('rejects only the inputs of a failed batch and goes on with the next', async () => {
    const { batcher, sends } = recorded((inputs) => inputs.includes(1));
    const first = batcher.run('t', 1);
    const second = batcher.run('t', 2);
    sends[0]!.release();
    await expect(first).rejects.toThrow('send failed');
    await tick();
    sends[1]!.release();
    expect(await second).toBe('t:2');
  });

  it('starts a fresh batch for a key whose queue has drained', async () => {
    const { batcher, sends } = recorded();
    const one = batcher.run('t', 1);
    sends[0]!.release();
    await one;
    const two = batcher.run('t', 2);
    expect(sends.map((s) => s.inputs)).toEqual([[1], [2]]);
    sends[1]!.release();
    expect(await two).toBe('t:2');
  });
});
