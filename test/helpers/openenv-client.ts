// OpenEnv's clients, replayed exactly as their code drives the wire (huggingface/OpenEnv, June 2026):
// src/openenv/core/env_client.py EnvClient (base URL http→ws plus "/ws"; one JSON text frame sent, the
// next frame received is its reply, within message_timeout_s = 60 s; a reply of type "error" raises
// RuntimeError("Server error: {message} (code: {code})"); disconnect() sends {"type":"close"} then
// closes; no reconnect, no resend), generic_client.py GenericEnvClient (observation = the payload's
// `observation` dict) and mcp_client.py MCPToolClient (list_tools = step {"type":"list_tools"};
// call_tool = step {"type":"call_tool","tool_name","arguments"}, raising RuntimeError("Tool '{name}'
// failed: ...") when the observation has an `error`, else returning result["data"]).
import WebSocket from 'ws';

export interface StepResult {
  observation: Record<string, unknown>;
  reward: number | null;
  done: boolean;
}

export class ServerError extends Error {
  constructor(readonly data: { message?: string; code?: string; retryable?: boolean }) {
    super(`Server error: ${data.message ?? 'Unknown error'} (code: ${data.code ?? 'UNKNOWN'})`);
  }
}

/** utils.py convert_to_ws_url, then env_client.py's `/ws`. */
export function wsUrl(baseUrl: string): string {
  let u = baseUrl.replace(/\/+$/, '');
  if (u.startsWith('http://')) u = `ws://${u.slice(7)}`;
  else if (u.startsWith('https://')) u = `wss://${u.slice(8)}`;
  else if (!u.startsWith('ws://') && !u.startsWith('wss://')) u = `ws://${u}`;
  return `${u}/ws`;
}

export class EnvClient {
  ws: WebSocket | undefined;
  private readonly inbox: string[] = [];
  private waiter: ((frame: string) => void) | undefined;
  private closedWith: Error | undefined;

  constructor(
    readonly baseUrl: string,
    private readonly messageTimeoutMs = 60_000,
  ) {}

  async connect(): Promise<this> {
    if (this.ws) return this;
    const ws = new WebSocket(wsUrl(this.baseUrl), { maxPayload: 100 * 1024 * 1024 });
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
      ws.once('unexpected-response', (_req, res) => reject(new Error(`Failed to connect to ${wsUrl(this.baseUrl)}: HTTP ${res.statusCode}`)));
    });
    ws.on('message', (data: Buffer) => {
      const w = this.waiter;
      this.waiter = undefined;
      if (w) w(data.toString('utf8'));
      else this.inbox.push(data.toString('utf8'));
    });
    ws.on('close', (code) => {
      this.closedWith = new Error(`ConnectionClosed (${code})`);
      const w = this.waiter;
      this.waiter = undefined;
      w?.('');
    });
    this.ws = ws;
    return this;
  }

  async send(message: unknown): Promise<void> {
    await this.connect();
    this.ws!.send(JSON.stringify(message));
  }

  async receive(): Promise<Record<string, unknown>> {
    const next = this.inbox.shift();
    if (next !== undefined) return JSON.parse(next) as Record<string, unknown>;
    if (this.closedWith) throw this.closedWith;
    const frame = await new Promise<string>((resolve, reject) => {
      const t = setTimeout(() => reject(new Error('TimeoutError')), this.messageTimeoutMs);
      this.waiter = (f) => (clearTimeout(t), resolve(f));
    });
    if (frame === '' && this.closedWith) throw this.closedWith;
    return JSON.parse(frame) as Record<string, unknown>;
  }

  async sendAndReceive(message: unknown): Promise<Record<string, unknown>> {
    await this.send(message);
    const response = await this.receive();
    if (response.type === 'error') throw new ServerError((response.data ?? {}) as ServerError['data']);
    return response;
  }

  /** GenericEnvClient._parse_result. */
  private parse(payload: Record<string, unknown>): StepResult {
    return { observation: (payload.observation ?? {}) as Record<string, unknown>, reward: (payload.reward ?? null) as number | null, done: Boolean(payload.done ?? false) };
  }

  async reset(kwargs: Record<string, unknown> = {}): Promise<StepResult> {
    return this.parse(((await this.sendAndReceive({ type: 'reset', data: kwargs })).data ?? {}) as Record<string, unknown>);
  }

  async step(action: Record<string, unknown>): Promise<StepResult> {
    return this.parse(((await this.sendAndReceive({ type: 'step', data: action })).data ?? {}) as Record<string, unknown>);
  }

  async state(): Promise<Record<string, unknown>> {
    return ((await this.sendAndReceive({ type: 'state' })).data ?? {}) as Record<string, unknown>;
  }

  async mcp(request: Record<string, unknown>): Promise<Record<string, unknown>> {
    return ((await this.sendAndReceive({ type: 'mcp', data: request })).data ?? {}) as Record<string, unknown>;
  }

  /** MCPToolClient.list_tools (uncached). */
  async listTools(): Promise<{ name: string; description: string; input_schema: Record<string, unknown> }[]> {
    const r = await this.step({ type: 'list_tools' });
    return (r.observation.tools ?? []) as { name: string; description: string; input_schema: Record<string, unknown> }[];
  }

  /** MCPToolClient.call_tool: the observation's error raises, else result.data. */
  async callTool(name: string, args: Record<string, unknown> = {}): Promise<unknown> {
    const r = await this.step({ type: 'call_tool', tool_name: name, arguments: args });
    const error = r.observation.error as { message: string; error_type: string } | null | undefined;
    if (error) throw new Error(`Tool '${name}' failed: ${error.message} (type: ${error.error_type})`);
    const result = r.observation.result as { data?: unknown } | null;
    return result && typeof result === 'object' && 'data' in result ? result.data : result;
  }

  /** env_client.py disconnect(): a close frame (best effort), then the socket's close. */
  async close(): Promise<void> {
    if (!this.ws) return;
    try {
      this.ws.send(JSON.stringify({ type: 'close' }));
    } catch {
      // best effort, as the client
    }
    const ws = this.ws;
    this.ws = undefined;
    if (ws.readyState === WebSocket.CLOSED) return;
    await new Promise<void>((resolve) => {
      ws.once('close', () => resolve());
      ws.close();
    });
  }

  /** An abrupt close: the TCP connection dropped, no close frame, no closing handshake. */
  drop(): void {
    this.ws?.terminate();
    this.ws = undefined;
  }
}
