// The trainer's grader calls (POST /grade, POST /graders/:name) and OpenAI's grader API shape
// for running a grader config locally (POST /v1/graders/run, /v1/graders/validate).
import { randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from '@fastify/type-provider-zod';
import { z } from 'zod';
import { errors, isRftError } from '../../errors.js';
import { gradeRequestSchema, sampleSchema, type GradeRequest } from '../../protocol/wire.js';
import { runErrorReply, runGraderConfig, validateGraderConfig, type RunResult } from '../../grading/index.js';
import { defaultGrader } from '../../registry/loader.js';
import { runOfHeaders } from '../../protocol/run-label.js';
import type { Sandbox } from '../../sandbox/types.js';
import { answerSample } from '../../protocol/json-or-null.js';

const runRequestSchema = z.looseObject({
  grader: z.unknown().describe('an OpenAI grader config: string_check, text_similarity, score_model, label_model, multi'),
  model_sample: z.union([z.string(), sampleSchema]).optional().describe("OpenAI's form: the output text (ours also takes a sample)"),
  sample: sampleSchema.optional(),
  item: z.record(z.string(), z.unknown()).nullish(),
});
type RunRequest = z.infer<typeof runRequestSchema>;

const scoreSchema = z.object({ score: z.number() });
const validateSchema = z.looseObject({ grader: z.unknown() });
/** OpenAI's GraderRunResponse (plus sub_rewards and, on our path, an explanation). */
const runReplySchema = z.object({
  reward: z.number(),
  metadata: z.unknown().describe("OpenAI's metadata: name, type, errors (flags), execution_time, scores, token_usage, sampled_model_name"),
  sub_rewards: z.record(z.string(), z.number()),
  model_grader_token_usage_per_model: z.record(z.string(), z.unknown()),
  explanation: z.string().optional().describe('ours, not OpenAI\'s: why the score'),
});
const plainJson = () => (data: unknown) => JSON.stringify(data);

export default async function graderRoutes(app: FastifyInstance): Promise<void> {
  const { registry, grading, config, sandboxes } = app.rft;

  async function grade(req: FastifyRequest, name: string | undefined) {
    if (!name) throw errors.noDefaultGrader([...registry.graders.keys()]);
    const grader = registry.graders.get(name);
    if (!grader) throw errors.unknownGrader(name, [...registry.graders.keys()]);
    const body = req.body as GradeRequest;
    const run = runOfHeaders(req.headers);
    if (req.cutFromBody) {
      req.log.warn({ trace_id: body.trace_id, cut: req.cutFromBody }, `${req.cutFromBody} nested deeper than RFT_MAX_JSON_DEPTH: graded as null`);
    }
    const { record } = await grading.grade(grader, {
      sample: body.sample,
      item: body.item ?? {},
      traceId: body.trace_id,
      credential: req.credential?.label ?? null,
      source: 'endpoint',
      run,
    });
    // A recorded ok grade always holds a score; never answer a false zero if one did not.
    if (record.score === null) throw errors.graderFailed(name, 'no score was recorded');
    return { score: record.score };
  }

  const api = app.withTypeProvider<ZodTypeProvider>();
  // The trainer's routes: the reply is written without a zod pass (a reply check failing there would
  // be a 500, and a dropped rollout); the schema declares it.
  const trainer = { config: { trainer: true, cutDeepOutputJson: true }, serializerCompiler: plainJson as never };
  const gradeDescription =
    'The final answer of a rollout, once. 200 {score} in the grader\'s range; a grader that cannot score answers 500 ' +
    '(the trainer retries, then drops the rollout, rather than train on a false zero). A retry returns the recorded score.';
  api.post(
    '/grade',
    { ...trainer, schema: { summary: 'Grade a rollout with the default grader', description: gradeDescription, tags: ['trainer'], body: gradeRequestSchema, response: { 200: scoreSchema } } },
    (req) => grade(req, defaultGrader(app.rft.registry, app.rft.config.defaultGrader)),
  );
  api.post(
    '/graders/:name',
    {
      ...trainer,
      schema: {
        summary: 'Grade a rollout with the named grader',
        description: gradeDescription,
        tags: ['trainer'],
        params: z.object({ name: z.string().max(128) }),
        body: gradeRequestSchema,
        response: { 200: scoreSchema },
      },
    },
    (req) => grade(req, req.params.name),
  );

  const validate = async (req: FastifyRequest) => ({ grader: validateGraderConfig((req.body as z.infer<typeof validateSchema>).grader) });

  const run = async (req: FastifyRequest): Promise<RunResult> => {
    const body = req.body as RunRequest;
    const graderConfig = validateGraderConfig(body.grader);
    const ms = body.model_sample ?? body.sample ?? { output_text: '' };
    // OpenAI's endpoint takes model_sample as the output text; ours also takes a full sample object.
    const sample = typeof ms === 'string' ? answerSample(ms, { maxBytes: config.bodyLimitBytes, maxDepth: config.maxJsonDepth }) : ms;
    // A python grader runs in a fresh sandbox of the server's driver, as when it grades a rollout; destroyed after.
    const owned: Sandbox[] = [];
    const python = sandboxes
      ? {
          sandbox: async () => {
            const sb = await sandboxes.createEphemeral({ traceId: `trace_graders_run_${randomUUID()}` });
            owned.push(sb);
            return sb;
          },
        }
      : undefined;
    try {
      return await runGraderConfig(graderConfig, sample, body.item ?? {}, { openai: config.openai, ...(python ? { python } : {}) });
    } catch (e) {
      // As OpenAI's endpoint does: a grader that fails to run is a reply with its error flags set.
      if (isRftError(e)) return runErrorReply(graderConfig, e);
      throw e;
    } finally {
      await Promise.allSettled(owned.map((sb) => sb.destroy()));
    }
  };

  // Ours (OpenAI's reply plus an explanation), and OpenAI's own paths, so the official SDK works
  // with baseURL <server>/v1: client.fineTuning.alpha.graders.run() and .validate().
  const validateSchemas = { tags: ['graders'], body: validateSchema, response: { 200: validateSchema } };
  // Written as the grading library built it (no zod pass that would drop a field the schema does not name).
  const runSchemas = { tags: ['graders'], body: runRequestSchema, response: { 200: runReplySchema } };
  const asBuilt = { serializerCompiler: plainJson as never };
  api.post('/v1/graders/validate', { schema: { summary: 'Check an OpenAI grader config (400 names the bad field)', ...validateSchemas } }, validate);
  api.post('/v1/graders/run', { ...asBuilt, schema: { summary: 'Run an OpenAI grader config on a sample, locally', ...runSchemas } }, run);
  api.post('/v1/fine_tuning/alpha/graders/validate', { schema: { summary: "The same at OpenAI's path (the openai SDK)", ...validateSchemas } }, validate);
  api.post('/v1/fine_tuning/alpha/graders/run', { ...asBuilt, schema: { summary: "Run a grader at OpenAI's path (the openai SDK's reply shape)", ...runSchemas } }, async (req) => {
    const { explanation: _explanation, ...reply } = await run(req);
    return reply;
  });
}

