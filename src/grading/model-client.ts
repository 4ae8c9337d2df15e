// The OpenAI-compatible client behind score_model, label_model and cosine. Settings come from the
// options, which the server fills from its config (OPENAI_BASE_URL, OPENAI_API_KEY, RFT_MODEL_*).
// A failed call is a 502 (RFT_ERR_MODEL_GRADER): the trainer retries a grader call a few times,
// which is the right reaction to a flaky model API. A reply past 32 MiB is aborted there, never
// buffered whole (./reply-cap.ts): a broken or hostile endpoint cannot fill the server's memory.
import OpenAI, { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from 'openai';
import { errors, isRftError, type RftError } from '../errors.js';
import { cappedFetch, DEFAULT_MAX_REPLY_BYTES } from './reply-cap.js';

export interface ModelOptions {
  baseURL?: string;
  apiKey?: string;
  /** Per request, in ms (default 60 000). */
  timeoutMs?: number;
  /** Retries of failed requests, timeouts included (default 2, the SDK's). */
  maxRetries?: number;
  /** For text_similarity cosine (default text-embedding-3-large). */
  embeddingModel?: string;
}

export const DEFAULT_EMBEDDING_MODEL = 'text-embedding-3-large';

const clients = new Map<string, OpenAI>();

/** One client per distinct setting, so connections are reused across grading calls. */
export function modelClient(opts: ModelOptions = {}): OpenAI {
  const { baseURL, apiKey } = opts;
  // Without a key the SDK would throw its own uncoded error; with neither key nor base URL the
  // request would go to api.openai.com unauthenticated. Refuse both up front.
  if (!apiKey) throw errors.modelGrader('config', 'no API key: set OPENAI_API_KEY in the server\'s environment or config file');
  const timeout = opts.timeoutMs ?? 60_000;
  const maxRetries = opts.maxRetries ?? 2;
  const key = JSON.stringify([baseURL ?? null, apiKey, timeout, maxRetries]);
  let client = clients.get(key);
  if (!client) {
    const fetch = cappedFetch(DEFAULT_MAX_REPLY_BYTES, (limit) => errors.modelGrader('reply_too_large', `the model's reply exceeds ${limit} bytes: the request was aborted there`));
    client = new OpenAI({ apiKey, timeout, maxRetries, fetch, ...(baseURL !== undefined ? { baseURL } : {}) });
    clients.set(key, client);
  }
  return client;
}

/** Maps an SDK failure to a coded error; coded errors pass through. */
export function modelFailure(e: unknown, what: string): RftError {
  if (isRftError(e)) return e;
  if (e instanceof APIConnectionTimeoutError) return errors.modelGrader('timeout', `${what} timed out`);
  if (e instanceof APIUserAbortError) return errors.modelGrader('aborted', `${what} was aborted`);
  if (e instanceof APIConnectionError) return errors.modelGrader('connection', `${what}: ${e.message}`);
  if (e instanceof APIError) return errors.modelGrader('api', `${what}: HTTP ${e.status ?? '?'} ${e.message}`);
  return errors.modelGrader('api', `${what}: ${e instanceof Error ? e.message : String(e)}`);
}
