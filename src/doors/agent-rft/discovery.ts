// What a user pastes into a dataset row (tool schemas) and into a job (method.reinforcement).
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from '@fastify/type-provider-zod';
import { z } from 'zod';
import { errors } from '../../errors.js';
import { chatCompletionsTools, defaultGrader } from '../../registry/loader.js';
import { JOB_DEFAULTS, loadJobFile } from '../../registry/job-file.js';
import { headerSnippet } from '../../authentication/key-headers.js';

const toolsParam = z.union([z.string(), z.array(z.string())]).optional().describe('comma-separated tool names: only these (one task\'s tools)');
const jobConfigQuery = z.object({
  base_url: z.url().optional().describe('the public address of this server, e.g. https://rft.example.com'),
  grader: z.string().optional(),
  tools: toolsParam,
});
const endpoint = { headers: z.record(z.string(), z.string()) };
const jobConfigReply = z.object({
  tools: z.array(z.object({ name: z.string(), server_url: z.string(), ...endpoint })),
  grader: z
    .object({ type: z.string().describe('"endpoint"'), name: z.string(), url: z.string(), ...endpoint, rate_limit: z.number(), pass_threshold: z.number() })
    .optional()
    .describe('absent only when the server loaded no grader'),
  max_episode_steps: z.number().describe("the project's job.json, else 10"),
  hyperparameters: z.record(z.string(), z.unknown()).optional().describe("the project's job.json"),
});
const jobRequest = z.object({ method: z.literal('POST'), url: z.string(), headers: z.record(z.string(), z.string()), body: z.record(z.string(), z.unknown()) });
const jobBodyReply = z.object({ openai: jobRequest, azure: jobRequest });

/** The uploaded files' ids, which only the user has: placeholders to replace. */
const TRAINING_FILE = '<TRAINING_FILE_ID>';
const VALIDATION_FILE = '<VALIDATION_FILE_ID>';

export default async function discoveryRoutes(app: FastifyInstance): Promise<void> {
  const { registry, config } = app.rft;
  const job = loadJobFile(config.jobFile.path, config.jobFile.required);

  // ?tools=a,b limits both answers to one task's tools when the server holds several tasks' units.
  const selected = (query: unknown): string[] => {
    const raw = (query as { tools?: unknown } | null)?.tools;
    const all = [...registry.tools.keys()];
    if (raw === undefined) return all;
    const names = (Array.isArray(raw) ? raw : [raw]).flatMap((v) => String(v).split(',')).map((s) => s.trim()).filter(Boolean);
    const unknown = names.find((n) => !registry.tools.has(n));
    if (unknown !== undefined) throw errors.unknownTool(unknown, all);
    return [...new Set(names)];
  };

  const api = app.withTypeProvider<ZodTypeProvider>();
  const tags = ['discovery'];
  api.get(
    '/v1/tools',
    {
      schema: {
        summary: "The tools' schemas in Chat Completions format: the `tools` array every dataset row carries",
        tags,
        querystring: z.object({ tools: toolsParam }),
        response: { 200: z.object({ tools: z.array(z.unknown()).describe('[{type: "function", function: {name, description, parameters (JSON Schema)}}]') }) },
      },
    },
    async (req) => ({ tools: chatCompletionsTools(registry, selected(req.query)) }),
  );

  // The job's method.reinforcement: the tools, the one grader the user chose (never a guess, never
  // left out while graders are loaded), and what the project's job.json says.
  const fragment = (req: FastifyRequest) => {
    const tools = selected(req.query);
    const q = req.query as z.infer<typeof jobConfigQuery>;
    const base = (q.base_url ?? `${config.tls ? 'https' : 'http'}://${req.headers.host ?? `${config.host}:${config.port}`}`).replace(/\/+$/, '');
    const graderName = q.grader ?? defaultGrader(registry, config.defaultGrader);
    if (graderName === undefined && registry.graders.size > 0) throw errors.noDefaultGrader([...registry.graders.keys()]);
    if (graderName !== undefined && !registry.graders.has(graderName)) throw errors.unknownGrader(graderName, [...registry.graders.keys()]);
    // The first header the server reads a key from (RFT_API_KEY_HEADERS), as the job must send it.
    const headers = headerSnippet(app.rft.auth.keyHeaders[0]!, '<YOUR_RFT_KEY>');
    const reinforcement = job?.method?.reinforcement;
    return {
      tools: tools.map((name) => ({ name, server_url: `${base}/tools`, headers })),
      ...(graderName !== undefined
        ? {
            grader: {
              type: 'endpoint',
              name: graderName,
              url: `${base}/graders/${graderName}`,
              headers,
              rate_limit: reinforcement?.grader?.rate_limit ?? 50,
              pass_threshold: reinforcement?.grader?.pass_threshold ?? 0.5,
            },
          }
        : {}),
      max_episode_steps: reinforcement?.max_episode_steps ?? JOB_DEFAULTS.maxEpisodeSteps,
      ...(reinforcement?.hyperparameters ? { hyperparameters: reinforcement.hyperparameters } : {}),
    };
  };

  api.get('/v1/job-config', { schema: { summary: "The job's method.reinforcement fragment for these tools and grader", tags, querystring: jobConfigQuery, response: { 200: jobConfigReply } } }, async (req) => fragment(req));

  api.get(
    '/v1/job-body',
    {
      schema: {
        summary: 'The whole fine-tuning job request (OpenAI and Azure AI Foundry), from job.json and this server',
        description: "The uploaded files' ids and the keys are placeholders to replace.",
        tags,
        querystring: jobConfigQuery,
        response: { 200: jobBodyReply },
      },
    },
    async (req) => {
      const { method, training_file: _t, validation_file: validation, ...rest } = job ?? {};
      const body = {
        ...rest,
        model: job?.model ?? JOB_DEFAULTS.model,
        training_file: TRAINING_FILE,
        // A job.json without a validation file asks for none; without a job.json, the README's body.
        ...(job === undefined || validation !== undefined ? { validation_file: VALIDATION_FILE } : {}),
        method: { ...method, type: 'reinforcement', reinforcement: { ...method?.reinforcement, ...fragment(req) } },
      };
      const json = { 'Content-Type': 'application/json' };
      return {
        openai: { method: 'POST' as const, url: 'https://api.openai.com/v1/fine_tuning/jobs', headers: { Authorization: 'Bearer <OPENAI_API_KEY>', ...json }, body },
        // Azure OpenAI's v1 API on the Foundry resource: the same body, its own key header.
        azure: { method: 'POST' as const, url: 'https://<YOUR-RESOURCE>.openai.azure.com/openai/v1/fine_tuning/jobs', headers: { 'api-key': '<AZURE_OPENAI_API_KEY>', ...json }, body },
      };
    },
  );
}
