// A step's action, as OpenEnv's MCP actions are (mcp_types.py ListToolsAction, CallToolAction: type
// discriminated, `metadata` allowed, nothing else). An action of another shape is the client's mistake,
// not the model's: OpenEnv answers it as a validation error (VALIDATION_ERROR frame, HTTP 422).
import { z } from 'zod';
import { errors } from '../../errors.js';

const metadata = z.record(z.string(), z.unknown()).optional();
export const actionSchema = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('list_tools'), metadata }),
  z.strictObject({
    type: z.literal('call_tool'),
    tool_name: z.string().min(1).max(200),
    arguments: z.record(z.string(), z.unknown()).default({}),
    metadata,
  }),
]);
export type Action = z.infer<typeof actionSchema>;

export function actionOf(data: unknown): Action {
  const parsed = actionSchema.safeParse(data);
  if (!parsed.success) {
    throw errors.badRequest(`invalid action (list_tools, or call_tool with tool_name and arguments): ${parsed.error.issues.map((i) => `${i.path.join('.') || '(action)'}: ${i.message}`).join('; ')}`);
  }
  return parsed.data;
}
