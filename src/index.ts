// The package's public surface (`import { defineTool, z } from 'rft-endpoints'`): what tools/*.ts and
// graders/*.ts import. The grader library is `rft-endpoints/grading`, the sandbox API
// `rft-endpoints/sandbox`. `z` is the server's own zod, so a unit's schemas are exactly the version
// the server turns into JSON Schema and validates with.
export { z } from 'zod';
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
export { RftError, errors, isRftError } from './errors.js';
