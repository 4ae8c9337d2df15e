// OpenEnv's GET routes, per environment (/{env}/health, /metadata, /schema, /state), as its server answers
// them (huggingface/OpenEnv src/openenv/core/env_server/http_server.py: GetEndpointConfig /metadata and
// /health, /state in simulation mode, get_schemas; the shapes are types.py HealthResponse,
// EnvironmentMetadata, SchemaResponse, State). Who reads them: `openenv validate` (cli/_validation.py:
// /health's `status` "healthy", /metadata's string `name` and `description`, /schema's three objects) and
// the providers' and AutoEnv's readiness polls of /health (a 200). /state is a fresh environment's state,
// as OpenEnv's (get_state_handler builds a fresh environment): HTTP keeps no episode.
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { Environment } from '../../environments/environment.js';
import { actionSchema } from './actions.js';

/** Episode.state()'s fields (OpenEnv's State: episode_id, step_count; extra fields allowed). */
const stateSchema = z.looseObject({
  episode_id: z.string().nullable().describe('Unique identifier for the current episode'),
  step_count: z.number().int().min(0).describe('Number of steps taken in the current episode'),
  environment: z.string(),
  split: z.enum(['train', 'validation']).nullable(),
  index: z.number().int().min(0).nullable(),
  trace_id: z.string().nullable().describe("The rollout's trace id in the record"),
  done: z.boolean(),
  reward: z.number().nullable(),
});

/** What an observation holds: a reset's prompt, a listing's tools, or a call's result (CallToolObservation). */
const observationSchema = z.looseObject({
  done: z.boolean().optional(),
  reward: z.number().nullable().optional(),
  metadata: z.record(z.string(), z.unknown()).optional(),
  prompt: z.string().optional().describe("A reset's: the row's messages as text"),
  messages: z.array(z.looseObject({ role: z.string(), content: z.unknown() })).optional(),
  tools: z.array(z.looseObject({ name: z.string(), description: z.string(), input_schema: z.record(z.string(), z.unknown()) })).optional(),
  tool_name: z.string().optional(),
  result: z.unknown().optional(),
  error: z.looseObject({ error_type: z.enum(['execution_error', 'invalid_args', 'tool_not_found', 'timeout']), message: z.string() }).nullable().optional(),
});

const jsonSchema = (s: z.ZodType) => z.toJSONSchema(s, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
const SCHEMAS = { action: jsonSchema(actionSchema), observation: jsonSchema(observationSchema), state: jsonSchema(stateSchema) };

/** A fresh environment's state: no episode, no step. */
export const freshState = (environment: string): z.infer<typeof stateSchema> => ({
  episode_id: null,
  step_count: 0,
  environment,
  split: null,
  index: null,
  trace_id: null,
  done: false,
  reward: null,
});

export function registerInfoRoutes(app: FastifyInstance, environment: (name: string) => Environment): void {
  app.get<{ Params: { env: string } }>('/:env/health', async (req) => {
    environment(req.params.env);
    return { status: 'healthy' };
  });
  app.get<{ Params: { env: string } }>('/:env/metadata', async (req) => {
    const env = environment(req.params.env);
    return {
      name: env.name,
      description: `The ${env.name} environment of rft-endpoints: its dataset rows, tools and grader (${env.grader}); submit ends an episode with the grader's reward.`,
      readme_content: null,
      version: null,
      author: null,
      documentation_url: null,
    };
  });
  app.get<{ Params: { env: string } }>('/:env/schema', async (req) => {
    environment(req.params.env);
    return SCHEMAS;
  });
  app.get<{ Params: { env: string } }>('/:env/state', async (req) => freshState(environment(req.params.env).name));
}
