// The package's public surface: what tools/*.ts and graders/*.ts import.
export { defineTool, defineGrader } from './registry/define.js';
export type {
  ToolDefinition,
  ToolContext,
  ToolResult,
  GraderDefinition,
  GraderContext,
  GraderInput,
  GraderResult,
  RolloutView,
} from './registry/define.js';
export type { Sandbox, ExecOptions, ExecResult, FileEntry } from './sandbox/types.js';
export type { BudgetUsage, RecordedCall, CallStatus } from './store/records.js';
export type { Sample, Item } from './protocol/wire.js';
export { RftError, errors } from './errors.js';
