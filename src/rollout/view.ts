// What a tool or a grader reads of its rollout (ctx.rollout): the row, the calls recorded so far and
// the budget. One definition for the ledger (tools) and the grading service (graders), so both
// quote the same budget from the same row.
import type { Item } from '../protocol/wire.js';
import type { RolloutView } from '../registry/define.js';
import type { Store } from '../store/types.js';
import { budgetFromItem } from './budget.js';

/** The rollout `traceId` as its row `item` and the record show it; `excludeCallId` leaves the asking call out of `calls()`. */
export function rolloutView(store: Store, defaultBudget: number, traceId: string, item: Item, excludeCallId?: string): RolloutView {
  return {
    traceId,
    item,
    calls: async () => (await store.listCalls(traceId)).filter((c) => c.callId !== excludeCallId),
    budget: () => store.getBudget(traceId, budgetFromItem(item, defaultBudget)),
  };
}
