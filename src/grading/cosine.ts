// text_similarity "cosine": cosine similarity of the two texts' embeddings from an
// OpenAI-compatible /v1/embeddings (one request for both texts). Embedding APIs refuse empty
// input, so an empty side is settled without a call: both empty -> 1, one empty -> 0.
import { modelClient, modelFailure, DEFAULT_EMBEDDING_MODEL, type ModelOptions } from './model-client.js';
import { addUsage, type RunUsage } from './usage.js';
import { errors } from '../errors.js';

export function cosineOf(a: ArrayLike<number>, b: ArrayLike<number>): number {
  if (a.length !== b.length) throw errors.modelGrader('unparseable', `embeddings differ in length (${a.length} vs ${b.length})`);
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    const x = a[i] as number;
    const y = b[i] as number;
    dot += x * y;
    na += x * x;
    nb += y * y;
  }
  return na === 0 || nb === 0 ? 0 : dot / Math.sqrt(na * nb);
}

export async function cosineSimilarity(
  input: string,
  reference: string,
  opts: { openai?: ModelOptions; signal?: AbortSignal; usage: RunUsage },
): Promise<number> {
  if (input.trim() === '' || reference.trim() === '') return input.trim() === reference.trim() ? 1 : 0;
  const model = opts.openai?.embeddingModel ?? DEFAULT_EMBEDDING_MODEL;
  try {
    const res = await modelClient(opts.openai).embeddings.create(
      { model, input: [input, reference] },
      opts.signal ? { signal: opts.signal } : {},
    );
    addUsage(opts.usage, res.model || model, res.usage, { sampled: false });
    const [a, b] = [...res.data].sort((x, y) => x.index - y.index);
    if (!a || !b) throw errors.modelGrader('unparseable', 'the embeddings reply has fewer than 2 vectors');
    return cosineOf(a.embedding, b.embedding);
  } catch (e) {
    throw modelFailure(e, `embeddings (${model})`);
  }
}
