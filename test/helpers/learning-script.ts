// A scripted finqa "policy that learns", for the dashboard: as the run goes on (rollouts started /
// rollouts planned) it answers right more often and searches less. Deterministic: the n-th
// rollout's plan depends only on n. A few rollouts answer at once, without a tool call, with the
// reference answer (what a policy that found a leak would do): they get the no_tool_score flag.
import type { Script } from './scripted-model.js';

export interface LearningRun {
  script: Script;
  /** Rollouts started so far. */
  started(): number;
}

export function learningScript(rows: { question: string; reference: string }[], planned: number, opts: { cheatEvery?: number } = {}): LearningRun {
  const byQuestion = new Map(rows.map((r) => [r.question, r.reference]));
  const cheatEvery = opts.cheatEvery ?? 9;
  let started = 0;
  const progress = () => Math.min(1, started / Math.max(1, planned));
  return {
    started: () => started,
    script: (ctx) => {
      const reference = byQuestion.get(ctx.userText) ?? '';
      if (ctx.turn === 0) {
        const n = started++;
        if (n % cheatEvery === cheatEvery - 1) return { text: `Answer: ${reference}` };
        return { calls: [{ name: 'search_docs', arguments: { query: ctx.userText } }, { name: 'list_docs', arguments: {} }] };
      }
      // Early in the run: up to 4 rounds of reading; late: one.
      const rounds = 1 + Math.round(3 * (1 - progress()));
      if (ctx.turn <= rounds) {
        const ids = [...ctx.toolOutputs.join('\n').matchAll(/"doc_id"\s*:\s*"([^"]+)"/g)].map((m) => m[1]!);
        const id = ids[(ctx.turn - 1) % Math.max(1, ids.length)] ?? 'unknown-doc';
        return { calls: [{ name: 'read_doc', arguments: { doc_id: id } }, ...(ctx.turn > 1 ? [{ name: 'search_docs', arguments: { query: `${ctx.userText} final` } }] : [])] };
      }
      // Right answers from about a quarter of the time to almost always, spread evenly (no randomness).
      const right = (started * 0.618) % 1 < 0.25 + 0.7 * progress();
      return { text: `Answer: ${right ? reference : 'I could not find it'}` };
    },
  };
}
