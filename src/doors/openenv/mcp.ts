// The `mcp` frames of an OpenEnv socket: JSON-RPC 2.0 on the socket's episode (huggingface/OpenEnv
// http_server.py mcp_handler with the socket's session): tools/list, tools/call, and OpenEnv's
// openenv/session/create (the socket's own session) and openenv/session/close (refused for it). A
// tools/call is a step of the episode like a call_tool action: same rollout, ledger and grade.
import { z } from 'zod';
import { isRftError } from '../../errors.js';
import type { Episode, StepData } from './episode.js';
import type { ToolSpec } from './rows.js';

// JSON-RPC 2.0 error codes (mcp_types.py JsonRpcErrorCode).
export const PARSE_ERROR = -32700;
export const INVALID_REQUEST = -32600;
export const METHOD_NOT_FOUND = -32601;
export const INVALID_PARAMS = -32602;
export const SERVER_ERROR = -32000;

export type JsonRpcReply = { jsonrpc: '2.0'; id: string | number | null; result: unknown } | { jsonrpc: '2.0'; id: string | number | null; error: { code: number; message: string; data: unknown } };

export const requestSchema = z.strictObject({
  jsonrpc: z.literal('2.0'),
  method: z.string(),
  params: z.record(z.string(), z.unknown()).default({}),
  id: z.union([z.string(), z.number()]).nullish(),
});

export const fail = (id: string | number | null, code: number, message: string, data: unknown = null): JsonRpcReply => ({ jsonrpc: '2.0', id, error: { code, message, data } });

/** MCP's tool listing shape (inputSchema), as OpenEnv's mcp_server path answers tools/list. */
export const mcpTools = (tools: ToolSpec[]) => tools.map((t) => ({ name: t.name, description: t.description, inputSchema: t.input_schema }));

/** A tools/call's reply from its step: a tool the episode lacks is -32602, as OpenEnv's mcp_server path answers it. */
export function callReply(id: string | number | null, name: string, step: StepData): JsonRpcReply {
  const obs = step.observation as { result: Record<string, unknown> | null; error: { error_type: string; message: string } | null };
  if (obs.error?.error_type === 'tool_not_found') return fail(id, INVALID_PARAMS, `Tool not found: ${name}`);
  // A tool's own failure is a result the model reads (MCP's isError), as over call_tool.
  const result = obs.result ?? { content: [{ type: 'text', text: obs.error?.message ?? '' }], structured_content: null, meta: null, data: obs.error?.message ?? '', is_error: true };
  return { jsonrpc: '2.0', id, result: step.done ? { ...result, structured_content: { reward: step.reward, done: true } } : result };
}

export async function mcpReply(data: unknown, episode: Episode | undefined, envTools: ToolSpec[], sessionId: string): Promise<JsonRpcReply> {
  const parsed = requestSchema.safeParse(data);
  if (!parsed.success) return fail(null, INVALID_REQUEST, `Invalid request: ${parsed.error.issues.map((i) => i.message).join('; ')}`);
  const { method, params } = parsed.data;
  const id = parsed.data.id ?? null;
  switch (method) {
    case 'openenv/session/create':
      return { jsonrpc: '2.0', id, result: { session_id: sessionId } };
    case 'openenv/session/close':
      return fail(id, INVALID_REQUEST, 'Cannot close active WebSocket-managed session via MCP method');
    case 'tools/list':
      return { jsonrpc: '2.0', id, result: { tools: mcpTools(episode?.tools ?? envTools) } };
    case 'tools/call': {
      const name = params.name;
      if (typeof name !== 'string' || name === '') return fail(id, INVALID_PARAMS, "Missing 'name' in params");
      if (!episode) return fail(id, INVALID_REQUEST, 'no episode on this socket: send a reset first', { code: 'RFT_ERR_OPENENV_NO_EPISODE', retryable: false });
      const args = params.arguments ?? {};
      if (!args || typeof args !== 'object' || Array.isArray(args)) return fail(id, INVALID_PARAMS, "'arguments' must be an object");
      try {
        return callReply(id, name, await episode.callTool(name, args));
      } catch (e) {
        if (!isRftError(e)) throw e;
        return fail(id, SERVER_ERROR, e.message, { code: e.code, retryable: e.statusCode >= 500 });
      }
    }
    default:
      return fail(id, METHOD_NOT_FOUND, `Method not found: ${method}`);
  }
}
