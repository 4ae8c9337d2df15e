// The trainer's retry rule (wire contract): a 5xx or a failed connection is retried at most 3 times,
// then the whole rollout is discarded. A 4xx is an answer, never retried.
import type { ServerClient, ServerReply } from './http.js';

export const MAX_RETRIES = 3;

export type Attempted = { ok: true; reply: ServerReply } | { ok: false; why: string };

export async function postWithRetries(
  server: ServerClient,
  path: string,
  body: unknown,
  backoffMs: number,
): Promise<Attempted> {
  let why = '';
  for (let attempt = 0; attempt <= MAX_RETRIES; attempt++) {
    if (attempt > 0 && backoffMs > 0) await new Promise((r) => setTimeout(r, backoffMs * 2 ** (attempt - 1)));
    try {
      const reply = await server.send('POST', path, body);
      if (reply.status < 500) return { ok: true, reply };
      why = `${reply.status} ${reply.text.slice(0, 200)}`;
    } catch (e) {
      why = e instanceof Error ? e.message : String(e);
    }
  }
  return { ok: false, why: `POST ${path} failed ${MAX_RETRIES + 1} times, last: ${why}` };
}
