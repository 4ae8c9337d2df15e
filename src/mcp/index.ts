// The MCP bridge's public surface: the servers of mcp.json bridged as tools (serving /mcp is the door in src/doors/mcp).
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { instanceIdFor } from '../sandbox/instance-id.js';

export { loadMcpConfig, withPythonTools } from './config.js';
export type { McpConfig, McpServerSpec } from './config.js';
export { McpBridge, bridgedName } from './bridge.js';
export type { BridgeOptions } from './bridge.js';
export { resultText } from './results.js';

/** Private directories of host (unsandboxed) rollout instances: per data dir, like the sandboxes root. */
export function mcpWorkRoot(dataDir: string): string {
  return join(tmpdir(), 'rft-endpoints-mcp', instanceIdFor(dataDir));
}
