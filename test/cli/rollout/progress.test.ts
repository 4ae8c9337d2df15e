import { describe, expect, it } from 'vitest';
import { Progress } from '../../../src/cli/rollout/progress.js';
import type { RolloutResult } from '../../../src/cli/rollout/run.js';

function sink(isTTY: boolean) {
  const chunks: string[] = [];
  const out = { isTTY, write: (s: string) => chunks.push(s) > 0 } as unknown as NodeJS.WriteStream;
  return { out, chunks };
}

const result = (score: number | null): RolloutResult => ({
  row: 0, try: 0, trace_id: 'trace_x', score, tool_calls: 1, steps: 2, max_steps_reached: false, latency_ms: 5,
  budget_exhausted: false, discarded: score === null, error: score === null ? 'boom' : null, error_code: null, own_ms: 0,
});

describe('rollout progress', () => {
  it('redraws one bar in place on a terminal, with the running mean and discards', () => {
    const { out, chunks } = sink(true);
    const p = new Progress(2, out);
    p.done(result(1));
    p.done(result(null));
    expect(chunks[0]).toMatch(/^\r\[#{15}\.{15}\] 1\/2 mean=1\.000 discarded=0$/);
    expect(chunks[1]).toMatch(/^\r\[#{30}\] 2\/2 mean=1\.000 discarded=1$/);
    expect(chunks[2]).toBe('\n');
  });

  it('prints one plain line per rollout when not on a terminal, its row counted from 0 as in the results file', () => {
    const { out, chunks } = sink(false);
    new Progress(1, out).done(result(null));
    expect(chunks).toEqual(['[1/1] row=0 try=0 trace_x discarded (boom) calls=1 steps=2 5ms\n']);
  });
});
