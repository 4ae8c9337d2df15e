// Token usage of one grading run, per model, as OpenAI's graders/run reports it:
// metadata.token_usage (total tokens, null when no model was called), metadata.sampled_model_name
// (the chat model a score_model/label_model sampled), model_grader_token_usage_per_model.
export interface TokenUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  cached_tokens: number;
}

export interface RunUsage {
  perModel: Record<string, TokenUsage>;
  /** The first chat model sampled (embeddings are not sampled). */
  sampledModel: string | null;
}

export function emptyUsage(): RunUsage {
  return { perModel: {}, sampledModel: null };
}

interface ApiUsage {
  prompt_tokens?: number;
  completion_tokens?: number;
  total_tokens?: number;
  prompt_tokens_details?: { cached_tokens?: number } | null;
}

export function addUsage(into: RunUsage, model: string, u: ApiUsage | null | undefined, opts: { sampled: boolean }): void {
  if (opts.sampled) into.sampledModel ??= model;
  const m = (into.perModel[model] ??= { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0, cached_tokens: 0 });
  if (!u) return;
  m.prompt_tokens += u.prompt_tokens ?? 0;
  m.completion_tokens += u.completion_tokens ?? 0;
  m.total_tokens += u.total_tokens ?? 0;
  m.cached_tokens += u.prompt_tokens_details?.cached_tokens ?? 0;
}

/** Total tokens over every model, or null when no model was called. */
export function totalTokens(u: RunUsage): number | null {
  const models = Object.values(u.perModel);
  return models.length === 0 ? null : models.reduce((n, m) => n + m.total_tokens, 0);
}
