// The smallest real context a finqa tool or answer_match can run with: the document tools never
// touch the sandbox or the ledger, and the grader only asks the rollout for its budget.
import pino from 'pino';
import type { BudgetUsage, GraderContext, ToolContext } from '../../src/index.js';

const noSandbox = (): Promise<never> => Promise.reject(new Error('the finqa units use no sandbox'));

function rollout(budget: BudgetUsage) {
  return { traceId: 'trace_test', item: {}, calls: async () => [], budget: async () => budget };
}

export function toolContext(): ToolContext {
  return {
    traceId: 'trace_test',
    callId: 'call_test',
    item: {},
    rollout: rollout({ used: 0, limit: 12, exceeded: false }),
    log: pino({ level: 'silent' }),
    signal: new AbortController().signal,
    sandbox: noSandbox,
  };
}

export function graderContext(budget: BudgetUsage = { used: 3, limit: 12, exceeded: false }): GraderContext {
  return {
    traceId: 'trace_test',
    rollout: rollout(budget),
    log: pino({ level: 'silent' }),
    signal: new AbortController().signal,
    templatesRoot: 'examples',
    sandbox: noSandbox,
    freshSandbox: noSandbox,
  };
}
