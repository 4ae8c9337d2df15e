// The grader library's public surface: helpers for TypeScript graders, and OpenAI grader configs
// run locally.
export { weighted, gate, budgetPenalty, numericCloseness, setF1, clamp01, parseNumber, extractNumbers } from './helpers.js';
export type { BudgetPenaltyOptions, ClosenessOptions, ParsedNumber, FoundNumber } from './helpers.js';
export { validateGraderConfig, GRADER_TYPES, SIMILARITY_METRICS } from './config.js';
export type { GraderConfig, StringCheckConfig, TextSimilarityConfig, ScoreModelConfig, LabelModelConfig, MultiConfig } from './config.js';
export { runGraderConfig, runErrorReply } from './run.js';
export type { RunOptions, RunResult, RunErrorFlags } from './run.js';
export { graderFromConfig, configVersion } from './endpoint.js';
export { canonicalJson, sha256 } from '../protocol/canonical.js';
export type { FromConfigOptions } from './endpoint.js';
export type { ModelOptions } from './model-client.js';
export { parseFormula, evaluateFormula, calculate } from './formula.js';
export { renderTemplate, resolvePath } from './template.js';
export { localSimilarity, LOCAL_METRICS, fuzzyRatio } from './similarity/index.js';
export type { LocalMetric } from './similarity/index.js';
