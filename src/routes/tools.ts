// POST /tools (dispatch on the body's `name`) and POST /tools/:name: the trainer's tool calls.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { errors } from '../errors.js';
import { parseFunctionCall, type FunctionCallOutput } from '../protocol/wire.js';
import { formatZodIssues } from '../ledger/output.js';

export default async function toolRoutes(app: FastifyInstance): Promise<void> {
  const { registry, ledger } = app.rft;

  async function handle(req: FastifyRequest, nameFromPath: string | undefined): Promise<FunctionCallOutput> {
    const parsed = parseFunctionCall(req.body);
    if (!parsed.success) throw errors.badRequest(`malformed function_call: ${formatZodIssues(parsed.error.issues)}`);
    const body = parsed.data;
    const name = nameFromPath ?? body.name;
    if (!name) throw errors.badRequest('malformed function_call: name is required');
    if (nameFromPath && body.name && body.name !== nameFromPath) {
      throw errors.badRequest(`body names tool "${body.name}" but the URL names "${nameFromPath}"`);
    }
    const tool = registry.tools.get(name);
    if (!tool) throw errors.unknownTool(name, [...registry.tools.keys()]);
    const outcome = await ledger.call(tool, {
      traceId: body.trace_id,
      callId: body.call_id,
      arguments: body.arguments,
      item: body.item ?? {},
      credential: req.credential?.label ?? null,
    });
    req.log.info({ trace_id: body.trace_id, call_id: body.call_id, tool: name, status: outcome.status, replayed: outcome.replayed }, 'tool call');
    return { type: 'function_call_output', call_id: body.call_id, ...(body.id !== undefined ? { id: body.id } : {}), output: outcome.output };
  }

  const trainer = { config: { trainer: true } };
  app.post('/tools', trainer, (req) => handle(req, undefined));
  app.post<{ Params: { name: string } }>('/tools/:name', trainer, (req) => handle(req, req.params.name));
}
