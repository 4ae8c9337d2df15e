// OpenEnv's production-mode HTTP MCP client, as huggingface/OpenEnv src/openenv/core/mcp_client.py
// (MCPClientBase._production_mcp_request) sends it: POST {base}/mcp with JSON
// {"jsonrpc": "2.0", "method", "params", "id"} (httpx's json=, so Content-Type application/json); the reply
// is read as JSON whatever its status (the client calls raise_for_status first: a 5xx raises).

export interface RpcReply {
  status: number;
  jsonrpc: string;
  id: string | number | null;
  result?: Record<string, unknown>;
  error?: { code: number; message: string; data: { code?: string; retryable?: boolean } | null };
}

/** One request as MCPClientBase._production_mcp_request posts it. */
export async function mcpPost(url: string, method: string, params: Record<string, unknown>, id: string | number | null): Promise<RpcReply> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', method, params, id }) });
  return { status: res.status, ...((await res.json()) as Omit<RpcReply, 'status'>) };
}
