// The trainer's retry rule (wire contract): a 5xx or a failed connection is retried at most 3 times,
// then the whole rollout is discarded. A 4xx is an answer, never retried.
import type { ServerClient, ServerReply } from './http.js';

export const MAX_RETRIES = 3;

/** The last failure: `code` is the server's RFT_ERR_* when its reply carried one. */
export type Attempted = { ok: true; reply: ServerReply } | { ok: false; why: string; code?: string };

/** Longest server text kept in a discard's reason: more than any coded message of ours. */
const TEXT_LIMIT = 2000;

/** `text` up to `limit` characters, cut at a word boundary and marked, never mid-word. */
export function clip(text: string, limit = TEXT_LIMIT): string {
  if (text.length <= limit) return text;
  const cut = text.lastIndexOf(' ', limit);
  return `${text.slice(0, cut > limit / 2 ? cut : limit)} ...`;
}

/** A reply's body as a reason: the server's `code: message` when it is a coded error, else the text. */
export function replyReason(reply: ServerReply): { why: string; code?: string } {
  try {
    const err = (JSON.parse(reply.text) as { error?: { code?: unknown; message?: unknown } }).error;
    if (typeof err?.code === 'string' && typeof err.message === 'string') return { why: `${reply.status} ${err.code}: ${clip(err.message)}`, code: err.code };
  } catch {
    // not JSON: the text itself
  }
  return { why: `${reply.status} ${clip(reply.text)}` };
}

export async function postWithRetries(
  server: ServerClient,
  path: string,
  body: unknown,
  backoffMs: number,
): Promise<Attempted> {
  let last: { why: string; code?: string } = { why: '' };
  for (let attempt = 0; attempt <= MAX_RETRIES; attempt++) {
    if (attempt > 0 && backoffMs > 0) await new Promise((r) => setTimeout(r, backoffMs * 2 ** (attempt - 1)));
    try {
      const reply = await server.send('POST', path, body);
      if (reply.status < 500) return { ok: true, reply };
      last = replyReason(reply);
    } catch (e) {
      last = { why: e instanceof Error ? e.message : String(e) };
    }
  }
  return { ok: false, ...last, why: `POST ${path} failed ${MAX_RETRIES + 1} times, last: ${last.why}` };
}
