// slime's and OpenRLHF's remote reward calls, replayed as their files make them (neither client can be
// installed here). Both post aiohttp's `json=` body: Python's json.dumps (", " and ": " separators,
// non-ASCII escaped) with Content-Type application/json, and call raise_for_status() on the reply.
// The retry loops are theirs; only the sleeps between tries are scaled by `sleepScale` so a test
// need not wait minutes (the number of tries and what is retried are unchanged).

/** Python's json.dumps(value) with its defaults (ensure_ascii=True, separators (', ', ': ')). */
export function pyJsonDumps(value: unknown): string {
  if (value === null || value === undefined) return 'null';
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (typeof value === 'number') return String(value);
  if (typeof value === 'string') return JSON.stringify(value).replace(/[\u0080-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  if (Array.isArray(value)) return `[${value.map(pyJsonDumps).join(', ')}]`;
  return `{${Object.entries(value as Record<string, unknown>).map(([k, v]) => `${pyJsonDumps(k)}: ${pyJsonDumps(v)}`).join(', ')}}`;
}

export interface ClientRun<T> {
  /** The reply JSON the client returns (undefined when it raised). */
  result: T | undefined;
  /** What the client raised after its last try. */
  raised: string | undefined;
  /** The statuses of each try (0: no reply). */
  statuses: number[];
}

async function postJson(url: string, payload: unknown): Promise<{ status: number; body: unknown }> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: pyJsonDumps(payload) });
  const text = await res.text();
  if (res.status < 200 || res.status >= 400) return { status: res.status, body: undefined }; // raise_for_status
  return { status: res.status, body: JSON.parse(text) as unknown };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * slime `slime/rollout/rm_hub/__init__.py` remote_rm(args, sample, max_retries=10): payload
 * {prompt, response, label}; any exception (a status >= 400 included) is retried after
 * min(2**attempt, 30) + random() seconds; the last one is raised. The reply JSON is the reward.
 */
export async function slimeRemoteRm(url: string, sample: { prompt: unknown; response: string; label: unknown }, sleepScale = 0.001): Promise<ClientRun<unknown>> {
  const payload = { prompt: sample.prompt, response: sample.response, label: sample.label };
  const statuses: number[] = [];
  const maxRetries = 10;
  for (let attempt = 0; attempt < maxRetries; attempt++) {
    let error: string;
    try {
      const r = await postJson(url, payload);
      statuses.push(r.status);
      if (r.body !== undefined) return { result: r.body, raised: undefined, statuses };
      error = `ClientResponseError ${r.status}`;
    } catch (e) {
      statuses.push(0);
      error = (e as Error).message;
    }
    if (attempt + 1 >= maxRetries) return { result: undefined, raised: error, statuses };
    await sleep((Math.min(2 ** attempt, 30) + Math.random()) * 1000 * sleepScale);
  }
  throw new Error('unreachable');
}

export interface OpenRlhfReply {
  rewards: number[];
  scores: number[];
  extra_logs: Record<string, number[]>;
}

/**
 * OpenRLHF `openrlhf/utils/agent.py` SingleTurnAgentExecutor._fetch_rewards_via_http with one
 * endpoint: payload {query, prompts, labels}; _post_request tries 5 times, 1 s apart, on any error
 * (raise_for_status included), then raises RuntimeError, which execute() logs and leaves the
 * sample's reward None.
 */
export async function openRlhfFetchRewards(url: string, queries: string[], prompts: string[], labels: unknown[], sleepScale = 0.001): Promise<ClientRun<OpenRlhfReply>> {
  const payload = { query: queries, prompts, labels };
  const statuses: number[] = [];
  for (let i = 0; i < 5; i++) {
    try {
      const r = await postJson(url, payload);
      statuses.push(r.status);
      if (r.body !== undefined) return { result: r.body as OpenRlhfReply, raised: undefined, statuses };
    } catch {
      statuses.push(0);
    }
    await sleep(1000 * sleepScale);
  }
  return { result: undefined, raised: 'RuntimeError: Request error for 5 times', statuses };
}
