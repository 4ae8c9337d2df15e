// What a user pastes into a dataset row (tool schemas) and into a job (method.reinforcement).
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from '@fastify/type-provider-zod';
import { z } from 'zod';
import { errors } from '../errors.js';
import { chatCompletionsTools, defaultGrader } from '../registry/loader.js';
import { headerSnippet } from '../authentication/key-headers.js';

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
    .optional(),
  max_episode_steps: z.number(),
});

export default async function discoveryRoutes(app: FastifyInstance): Promise<void> {
  const { registry, config } = app.rft;

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

  api.get('/v1/job-config', { schema: { summary: "The job's method.reinforcement fragment for these tools and grader", tags, querystring: jobConfigQuery, response: { 200: jobConfigReply } } }, async (req) => {
    const tools = selected(req.query);
    const q = { data: req.query };
    const base = (q.data.base_url ?? `${config.tls ? 'https' : 'http'}://${req.headers.host ?? `${config.host}:${config.port}`}`).replace(/\/+$/, '');
    const graderName = q.data.grader ?? defaultGraderName(app);
    // Several graders and none chosen: a coded error, never a fragment without a grader.
    if (graderName === undefined && registry.graders.size > 0) throw errors.noDefaultGrader([...registry.graders.keys()]);
    if (graderName && !registry.graders.has(graderName)) throw errors.unknownGrader(graderName, [...registry.graders.keys()]);
    // The first header the server reads a key from (RFT_API_KEY_HEADERS), as the job must send it.
    const headers = headerSnippet(app.rft.auth.keyHeaders[0]!, '<YOUR_RFT_KEY>');
    return {
      tools: tools.map((name) => ({ name, server_url: `${base}/tools`, headers })),
      ...(graderName
        ? { grader: { type: 'endpoint', name: graderName, url: `${base}/graders/${graderName}`, headers, rate_limit: 50, pass_threshold: 0.5 } }
        : {}),
      max_episode_steps: 10,
    };
  });
}

/** The grader behind POST /grade (registry/loader's defaultGrader for this app). */
export function defaultGraderName(app: FastifyInstance): string | undefined {
  return defaultGrader(app.rft.registry, app.rft.config.defaultGrader);
}
