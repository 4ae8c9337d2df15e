// The grader library's public surface: helpers for TypeScript graders, and OpenAI grader configs
// run locally.
export { weighted, gate, budgetPenalty, numericCloseness, setF1, clamp01, parseNumber, extractNumbers } from './helpers.js';
export type { BudgetPenaltyOptions, ClosenessOptions, ParsedNumber, FoundNumber } from './helpers.js';
