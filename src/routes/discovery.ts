// What a user pastes into a dataset row (tool schemas) and into a job (method.reinforcement).
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { errors } from '../errors.js';
import { chatCompletionsTools, defaultGrader } from '../registry/loader.js';
import { headerSnippet } from '../authentication/key-headers.js';

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

  app.get('/v1/tools', async (req) => ({ tools: chatCompletionsTools(registry, selected(req.query)) }));

  app.get('/v1/job-config', async (req) => {
    const tools = selected(req.query);
    const q = z.object({ base_url: z.url().optional(), grader: z.string().optional() }).safeParse(req.query);
    if (!q.success) throw errors.badRequest('base_url must be an absolute URL, e.g. https://rft.example.com');
    const base = (q.data.base_url ?? `${config.tls ? 'https' : 'http'}://${req.headers.host ?? `${config.host}:${config.port}`}`).replace(/\/+$/, '');
    const graderName = q.data.grader ?? defaultGraderName(app);
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
