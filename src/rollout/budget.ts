// A dataset row's `tool_budget`: the one rule the server and `dataset check` share.
//
// An invalid value ("12", 0.5, -1, null...) is a mistake in the dataset, not the model's. Answering
// it with a 400 would show that error to the model on every tool call of the rollout and train on
// it; so the rollout runs with the server's default budget (RFT_TOOL_BUDGET), the server logs a
// warning on the rollout's first call, and `rft-endpoints dataset check` refuses the row before a
// job is paid for.

/** A valid `tool_budget`: a JSON integer from 0 (no unit may be spent) up to 2^53 - 1. */
export function isValidToolBudget(v: unknown): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
}

/** Why a row's `tool_budget` is refused, or undefined when it is absent or valid. */
export function toolBudgetProblem(item: Record<string, unknown>): string | undefined {
  if (!('tool_budget' in item) || item.tool_budget === undefined) return undefined;
  const v = item.tool_budget;
  if (isValidToolBudget(v)) return undefined;
  return `tool_budget must be a non-negative integer (a JSON number), got ${JSON.stringify(v) ?? String(v)}`;
}

/** The rollout's budget: the row's valid `tool_budget`, else the server's default. */
export function budgetFromItem(item: Record<string, unknown>, fallback: number): number {
  const b = item.tool_budget;
  return isValidToolBudget(b) ? b : fallback;
}
