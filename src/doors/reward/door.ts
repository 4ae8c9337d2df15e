// The reward door: POST /reward/{grader} (and /reward, the default grader) on the private listener,
// for the trainers that grade a finished answer with no rollout of ours: slime's remote_rm and
// OpenRLHF's remote reward URL (docs/reward-endpoints.md). Each sample is a rollout of its own (door
// `reward`) graded once through the core, so the dashboard's learning curve counts it.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { errors } from '../../errors.js';
import { defaultGrader, type LoadedGrader } from '../../registry/loader.js';
import type { Grade } from '../core.js';
import type { PrivateDoor, PrivateDoorContext } from '../private/door.js';
import { parseRewardRequest, type RewardRequest } from './shapes.js';
import { timeOrderedId } from '../../rollout/ids.js';
import { runOfRequest } from '../../protocol/run-label.js';

export const REWARD_DOOR = 'reward';

/**
 * Grades every sample of the request, in parallel; the first failure fails the request (the client retries it
 * whole). A label nested too deep is refused first (400), the request then grading nothing. A label without
 * what the grader reads is graded and refused by it (RFT_ERR_BAD_ROW, recorded and flagged bad_row): this
 * door has no start to refuse it at, and both clients treat every status alike (docs/door-failures.md).
 */
async function gradeAll(ctx: PrivateDoorContext, grader: LoadedGrader, req: RewardRequest, run: string | undefined): Promise<Grade[]> {
  for (const [i, { item }] of req.samples.entries()) ctx.core.checkDepth(item, req.samples.length > 1 ? `label ${i}` : 'the label');
  return Promise.all(
    req.samples.map(async ({ answer, item }) => {
      // A rollout of its own, created with its door in the grade's commit (one write). No promise depends on
      // that record (no retry key: a retried request is a new rollout; no budget), so the reply waits for its
      // commit, not its fsync: it survives kill -9, not a power loss (src/store/README.md, "Fsync policy").
      const traceId = timeOrderedId('rw_', 8, 'hex');
      const rollout = { traceId, door: REWARD_DOOR, row: item, environment: undefined, tools: new Set<string>(), grader, run, durability: 'committed' as const };
      const g = await ctx.core.grade(rollout, answer);
      ctx.log.info({ trace_id: traceId, client: req.client, grader: g.grader, score: g.score, run }, 'reward graded');
      return g;
    }),
  );
}

/** OpenRLHF reads `rewards` (and `scores`, else rewards) per sample and logs each `extra_logs` key: the grader's subscores every sample has. */
function openRlhfReply(grades: Grade[]): Record<string, unknown> {
  const keys = Object.keys(grades[0]?.subscores ?? {}).filter((k) => grades.every((g) => k in g.subscores));
  return {
    rewards: grades.map((g) => g.score),
    scores: grades.map((g) => g.score),
    extra_logs: Object.fromEntries(keys.map((k) => [k, grades.map((g) => g.subscores[k])])),
  };
}

export const rewardDoor: PrivateDoor = {
  name: REWARD_DOOR,
  segments: ['reward'],
  register(app, ctx) {
    // A grader that reads tool calls would score an empty trajectory here: refused per request, and said at boot.
    const refused = [...ctx.registry.graders.values()].filter((g) => g.readsCalls).map((g) => g.def.name);
    if (refused.length) ctx.log.warn({ graders: refused, code: errors.graderReadsCalls.code }, 'the reward door does not serve graders that read tool calls (readsCalls)');
    const handle = async (req: FastifyRequest<{ Params: { grader?: string }; Querystring: { format?: string; run?: string } }>, reply: FastifyReply) => {
      const name = req.params.grader ?? defaultGrader(ctx.registry, ctx.config.defaultGrader);
      if (name === undefined) throw errors.noDefaultGrader([...ctx.registry.graders.keys()]);
      const grader = ctx.registry.graders.get(name);
      if (!grader) throw errors.unknownGrader(name, [...ctx.registry.graders.keys()]);
      if (grader.readsCalls) throw errors.graderReadsCalls(name, REWARD_DOOR);
      // The run: x-rft-run, else ?run= on the URL (slime's and OpenRLHF's clients take a URL and send no header of ours).
      const run = runOfRequest(req);
      const parsed = parseRewardRequest(req.body);
      const grades = await gradeAll(ctx, grader, parsed, run);
      void reply.type('application/json');
      if (parsed.client === 'openrlhf') return reply.send(JSON.stringify(openRlhfReply(grades)));
      const g = grades[0]!;
      // slime takes the reply as the reward: a number, or an object it reads with --reward-key (?format=object, then --reward-key reward).
      return reply.send(JSON.stringify(req.query.format === 'object' ? { reward: g.score, subscores: g.subscores } : g.score));
    };
    app.post('/reward', handle);
    app.post('/reward/:grader', handle);
  },
};
