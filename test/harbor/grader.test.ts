// The harbor grader's own rules (src/harbor/grader.ts): a verdict into the score and subscores, the
// row's task looked up, the rollout's sandbox required to be the one it worked in. The verify step
// itself (verify.ts) runs on Docker in test/harbor/e2e.docker.test.ts; here it is given verdicts.
import { describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { errors } from '../../src/errors.js';
import { harborGrader } from '../../src/harbor/grader.js';
import { defaultGrader } from '../../src/registry/loader.js';
import { readHarborTask } from '../../src/harbor/task.js';
import type { HarborTask, HarborVerdict } from '../../src/harbor/types.js';
import type { GraderContext } from '../../src/registry/define.js';
import type { Sandbox } from '../../src/sandbox/types.js';
import type { RecordedCall } from '../../src/store/records.js';

const read = readHarborTask(join(import.meta.dirname, '../../examples/harbor/config-repair'));
if (!('task' in read)) throw new Error(read.invalid.reason);
const task: HarborTask = read.task;
const item = { messages: [], sandbox: { harbor: 'harbor/config-repair' } };

function grade(verdict: HarborVerdict | Error, opts: { calls?: Partial<RecordedCall>[]; sandbox?: () => Promise<Sandbox>; item?: unknown } = {}) {
  const seen: { sandbox?: Sandbox; task?: HarborTask } = {};
  const g = harborGrader({
    tasks: (ref) => (ref === 'harbor/config-repair' ? task : undefined),
    verify: (sandbox, t) => {
      seen.sandbox = sandbox;
      seen.task = t;
      return verdict instanceof Error ? Promise.reject(verdict) : Promise.resolve(verdict);
    },
  });
  const ctx = {
    traceId: 't1',
    signal: new AbortController().signal,
    rollout: { calls: () => Promise.resolve(opts.calls ?? []) },
    sandbox: opts.sandbox ?? (() => Promise.resolve({ id: 'sb-1' } as Sandbox)),
  } as unknown as GraderContext;
  const result = Promise.resolve(g.def.handler({ sample: {}, item: (opts.item ?? item) as never } as never, ctx));
  return { result, seen, g };
}

describe('the harbor grader', () => {
  it("scores reward.json's reward with its other names as subscores, on the row's task and the rollout's sandbox", async () => {
    const { result, seen } = grade({ kind: 'scored', score: 0.3333, subscores: { port: 0, mode: 0, name_kept: 1 }, file: 'reward.json', log: 'ok' });
    await expect(result).resolves.toMatchObject({ score: 0.3333, subscores: { port: 0, mode: 0, name_kept: 1 }, explanation: expect.stringMatching(/reward\.json/) });
    expect(seen.task).toBe(task);
    expect(seen.sandbox?.id).toBe('sb-1');
  });

  it('scores reward.txt with no subscores', async () => {
    const r = await grade({ kind: 'scored', score: 0.75, subscores: {}, file: 'reward.txt', log: '' }).result;
    expect(r).toMatchObject({ score: 0.75 });
    expect(r).not.toHaveProperty('subscores');
  });

  it.each(['RewardFileNotFound', 'RewardFileEmpty', 'VerifierOutputParse', 'VerifierTimeout'] as const)("gives Harbor's %s the model's 0, saying so", async (reason) => {
    const r = await grade({ kind: 'model', score: 0, reason, log: 'test output' }).result;
    expect(r).toMatchObject({ score: 0, explanation: expect.stringContaining(reason) });
  });

  it("gives the verify step's changed programs (this server's check, not Harbor's) the model's 0, saying which", async () => {
    const r = await grade({ kind: 'model', score: 0, reason: 'VerifierToolsChanged', log: 'changed /usr/bin/bash' }).result;
    expect(r).toMatchObject({ score: 0, explanation: expect.stringContaining("were changed in the container (this server's check)") });
    expect(r).toMatchObject({ explanation: expect.stringContaining('changed /usr/bin/bash') });
  });

  it("passes the verify step's own failure on (ours: the trainer retries), never a 0", async () => {
    await expect(grade(errors.sandboxFailed('engine gone')).result).rejects.toMatchObject({ code: errors.sandboxFailed.code });
  });

  it('refuses a row naming a task the server does not serve', async () => {
    const { result } = grade({ kind: 'scored', score: 1, subscores: {}, file: 'reward.txt', log: '' }, { item: { messages: [], sandbox: { harbor: 'harbor/nope' } } });
    await expect(result).rejects.toMatchObject({ code: 'RFT_ERR_GRADER_CONFIG' });
  });

  it("refuses to grade a sandbox that is not the rollout's (it expired: the image's untouched state is not the work)", async () => {
    const { result, seen } = grade({ kind: 'scored', score: 1, subscores: {}, file: 'reward.txt', log: '' }, { calls: [{ sandbox: 'sb-old' }] });
    await expect(result).rejects.toMatchObject({ code: 'RFT_ERR_GRADER_FAILED' });
    expect(seen.task).toBeUndefined();
  });

  it("scores 0 when the rollout's own commands took its sandbox down", async () => {
    const { result } = grade({ kind: 'scored', score: 1, subscores: {}, file: 'reward.txt', log: '' }, { sandbox: () => Promise.reject(errors.sandboxEndedByRollout()) });
    await expect(result).resolves.toMatchObject({ score: 0 });
  });

  it('declares that it reads the calls, and the [0, 1] range', () => {
    const { g } = grade({ kind: 'scored', score: 1, subscores: {}, file: 'reward.txt', log: '' });
    expect(g).toMatchObject({ readsCalls: true, range: [0, 1] });
    expect(g.def.name).toBe('harbor');
  });

  it("is built in: never the project's default grader, which stays its only grader of graders/", () => {
    const { g } = grade({ kind: 'scored', score: 1, subscores: {}, file: 'reward.txt', log: '' });
    const own = { ...g, def: { ...g.def, name: 'mine' }, builtIn: false };
    expect(defaultGrader({ tools: new Map(), graders: new Map([['mine', own], ['harbor', g]]) }, undefined)).toBe('mine');
    expect(defaultGrader({ tools: new Map(), graders: new Map([['harbor', g]]) }, undefined)).toBeUndefined();
  });
});
