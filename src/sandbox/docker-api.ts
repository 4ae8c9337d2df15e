// A minimal Docker Engine API client over the daemon's unix socket (undici), not the docker CLI:
// no process spawn per call, and errors come back as status codes we can map.
import { Agent, request } from 'undici';
import { errors } from '../errors.js';

export const DOCKER_API = 'v1.41'; // Docker 20.10; newer daemons accept older API versions

export class DockerApi {
  private readonly agent: Agent;

  constructor(readonly socketPath: string) {
    this.agent = new Agent({ connect: { socketPath }, connections: 16, keepAliveTimeout: 30_000 });
  }

  /** Calls the API; returns the parsed JSON body (or null), throws RFT_ERR_SANDBOX on an unexpected status. */
  async call<T = unknown>(method: 'GET' | 'POST' | 'DELETE', path: string, body?: unknown, okStatuses: number[] = []): Promise<{ status: number; body: T }> {
    let res;
    try {
      res = await request(`http://docker/${DOCKER_API}${path}`, {
        method,
        dispatcher: this.agent,
        headers: body !== undefined ? { 'content-type': 'application/json' } : {},
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      });
    } catch (e) {
      throw errors.sandboxFailed(`docker ${method} ${path}: ${(e as Error).message}`);
    }
    const text = await res.body.text();
    const isJson = String(res.headers['content-type'] ?? '').includes('json');
    const parsed = (text && isJson ? JSON.parse(text) : text || null) as T;
    if (res.statusCode >= 300 && !okStatuses.includes(res.statusCode)) {
      const msg = (parsed as { message?: string } | null)?.message ?? text;
      throw errors.sandboxFailed(`docker ${method} ${path}: ${res.statusCode} ${msg}`);
    }
    return { status: res.statusCode, body: parsed };
  }

  close(): Promise<void> {
    return this.agent.close();
  }
}
