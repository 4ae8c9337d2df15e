// The trainer's grader calls (POST /grade, POST /graders/:name) and OpenAI's grader API shape
// for running a grader config locally (POST /v1/graders/run, /v1/graders/validate).
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { errors, isRftError } from '../errors.js';
import { gradeRequestSchema, sampleSchema } from '../protocol/wire.js';
import { formatZodIssues } from '../ledger/output.js';
import { runErrorReply, runGraderConfig, validateGraderConfig, type RunResult } from '../grading/index.js';
import { defaultGraderName } from './discovery.js';

const runRequestSchema = z.looseObject({
  grader: z.unknown(),
  model_sample: z.union([z.string(), sampleSchema]).optional(),
  sample: sampleSchema.optional(),
  item: z.record(z.string(), z.unknown()).nullish(),
});

export default async function graderRoutes(app: FastifyInstance): Promise<void> {
  const { registry, grading, config } = app.rft;

  async function grade(req: FastifyRequest, name: string | undefined) {
    if (!name) throw errors.unknownGrader('(default)', [...registry.graders.keys()]);
    const grader = registry.graders.get(name);
    if (!grader) throw errors.unknownGrader(name, [...registry.graders.keys()]);
    const parsed = gradeRequestSchema.safeParse(req.body);
    if (!parsed.success) throw errors.badRequest(`malformed grader request: ${formatZodIssues(parsed.error.issues)}`);
    if (req.cutFromBody) {
      req.log.warn({ trace_id: parsed.data.trace_id, cut: req.cutFromBody }, `${req.cutFromBody} nested deeper than RFT_MAX_JSON_DEPTH: graded as null`);
    }
    const { record } = await grading.grade(grader, {
      sample: parsed.data.sample,
      item: parsed.data.item ?? {},
      traceId: parsed.data.trace_id,
      credential: req.credential?.label ?? null,
      source: 'endpoint',
    });
    return { score: record.score };
  }

  const trainer = { config: { trainer: true, cutDeepOutputJson: true } };
  app.post('/grade', trainer, (req) => grade(req, defaultGraderName(app)));
  app.post<{ Params: { name: string } }>('/graders/:name', trainer, (req) => grade(req, req.params.name));

  const validate = async (req: FastifyRequest) => {
    const body = z.looseObject({ grader: z.unknown() }).safeParse(req.body);
    if (!body.success) throw errors.badRequest('expected { "grader": { ... } }');
    return { grader: validateGraderConfig(body.data.grader) };
  };

  const run = async (req: FastifyRequest): Promise<RunResult> => {
    const body = runRequestSchema.safeParse(req.body);
    if (!body.success) throw errors.badRequest(`malformed request: ${formatZodIssues(body.error.issues)}`);
    const graderConfig = validateGraderConfig(body.data.grader);
    const ms = body.data.model_sample ?? body.data.sample ?? { output_text: '' };
    // OpenAI's endpoint takes model_sample as the output text; ours also takes a full sample object.
    const sample = typeof ms === 'string' ? { output_text: ms, output_json: tryJson(ms), output_tools: [], choices: [] } : ms;
    try {
      return await runGraderConfig(graderConfig, sample, body.data.item ?? {}, { openai: config.openai });
    } catch (e) {
      // As OpenAI's endpoint does: a grader that fails to run is a reply with its error flags set.
      if (isRftError(e)) return runErrorReply(graderConfig, e);
      throw e;
    }
  };

  // Ours (OpenAI's reply plus an explanation), and OpenAI's own paths, so the official SDK works
  // with baseURL <server>/v1: client.fineTuning.alpha.graders.run() and .validate().
  app.post('/v1/graders/validate', validate);
  app.post('/v1/graders/run', run);
  app.post('/v1/fine_tuning/alpha/graders/validate', validate);
  app.post('/v1/fine_tuning/alpha/graders/run', async (req) => {
    const { explanation: _explanation, ...reply } = await run(req);
    return reply;
  });
}

function tryJson(s: string): unknown {
  try {
    return JSON.parse(s) as unknown;
  } catch {
    return null;
  }
}
