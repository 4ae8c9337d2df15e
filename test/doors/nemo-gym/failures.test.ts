// What /verify answers when the grader cannot grade (Gym's judge_failed convention) and when a failure
// of ours broke the episode (a 503: the trainer reruns the rollout), and reward_components' exact sum.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { repoRoot, startTestServer, type TestServer } from '../../helpers/server.js';
import { simpleAgentRun } from '../../helpers/nemo-gym-client.js';
import { rewardComponents } from '../../../src/doors/nemo-gym/reward.js';

const row = (extra: Record<string, unknown> = {}) => ({
  responses_create_params: { input: [{ role: 'user', content: 'q' }], tools: [{ type: 'function', name: 'gated_failure', parameters: {}, strict: true }] },
  reference_answer: '42',
  agent_ref: { name: 'rft_agent' },
  _ng_task_index: 0,
  _ng_rollout_index: 0,
  ...extra,
});

const units = join(repoRoot, 'test/fixtures/units');
for (const grader of ['broken', 'exact'] as const) {
  describe(`NeMo Gym /verify with the ${grader} grader`, () => {
    let server: TestServer;
    let door: string;
    const gates = mkdtempSync(join(tmpdir(), 'rft-gate-'));
    beforeAll(async () => {
      server = await startTestServer({
        toolsDir: join(units, 'infra-tools'),
        gradersDir: join(units, 'graders'),
        env: { RFT_NEMO_GYM_PORT: '0', RFT_DEFAULT_GRADER: grader, RFT_SQLITE_SYNC: 'normal' },
      });
      door = server.app.rft.nemoGym!.url;
    });
    afterAll(async () => {
      await server?.close();
      rmSync(gates, { recursive: true, force: true });
    });

    it(grader === 'broken' ? 'a grader that throws is a 200 with reward 0 marked judge_failed' : 'the reward is the grader\'s score, its subscores components that sum to it', async () => {
      const ep = await simpleAgentRun(door, row(), () => ({ message: '42' }));
      expect(ep.verify.status).toBe(200);
      const r = ep.result!;
      expect(Object.values(r.reward_components as Record<string, number>).reduce((s, v) => s + v, 0)).toBe(r.reward);
      if (grader === 'broken') expect(r).toMatchObject({ reward: 0, _ng_failure_class: 'judge_failed' });
      else expect(r).toMatchObject({ reward: 1, reward_components: { answer: 1, penalty: 0 } });
      expect(r.reference_answer).toBe('42');
    });

    it('a tool call that failed on our side makes /verify answer 503, so the trainer reruns the rollout', async () => {
      const gate = join(gates, `gate-${grader}`);
      writeFileSync(gate, '');
      const ep = await simpleAgentRun(door, row(), (step) => (step === 1 ? { calls: [{ name: 'gated_failure', arguments: JSON.stringify({ gate }) }] } : { message: '42' }));
      expect(ep.tools[0]!.reply!.status).toBe(503);
      expect(ep.verify.status).toBe(503);
      expect(JSON.parse(ep.verify.text).error.code).toBe('RFT_ERR_NEMO_GYM_ROLLOUT_LOST');
    });
  });
}

/** Python >= 3.12's sum() of floats (Neumaier's compensated sum), as NeMo RL's check runs it on 3.13. */
function neumaier(xs: number[]): number {
  let sum = 0;
  let c = 0;
  for (const x of xs) {
    const t = sum + x;
    c += Math.abs(sum) >= Math.abs(x) ? sum - t + x : x - t + sum;
    sum = t;
  }
  return sum + c;
}

describe('reward_components', () => {
  it('sum exactly to the reward, summed left to right or compensated, for any scores and subscores', () => {
    let seed = 7;
    const rand = () => ((seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31);
    for (let i = 0; i < 5_000; i++) {
      const score = i % 7 === 0 ? Math.round(rand() * 10) / 10 : rand() * (i % 3 === 0 ? 100 : 1);
      const subscores = Object.fromEntries(Array.from({ length: 1 + (i % 5) }, (_, k) => [`s${k}`, rand() * 3]));
      const parts = Object.values(rewardComponents('g', score, subscores));
      expect(parts.reduce((s, v) => s + v, 0)).toBe(score);
      expect(neumaier(parts)).toBe(score);
    }
  });
});
