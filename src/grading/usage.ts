// Token usage summed over every model call of one grading run (OpenAI's metadata.token_usage).
export interface TokenUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  cached_tokens: number;
}

export function emptyUsage(): TokenUsage {
  return { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0, cached_tokens: 0 };
}

interface ApiUsage {
  prompt_tokens?: number;
  completion_tokens?: number;
  total_tokens?: number;
  prompt_tokens_details?: { cached_tokens?: number } | null;
}

export function addUsage(into: TokenUsage, u: ApiUsage | null | undefined): void {
  if (!u) return;
  into.prompt_tokens += u.prompt_tokens ?? 0;
  into.completion_tokens += u.completion_tokens ?? 0;
  into.total_tokens += u.total_tokens ?? 0;
  into.cached_tokens += u.prompt_tokens_details?.cached_tokens ?? 0;
}
