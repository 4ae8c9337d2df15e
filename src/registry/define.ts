// What a user writes in tools/*.ts and graders/*.ts. Both are plain objects checked at boot.
import type { z } from 'zod';
import type { Logger } from 'pino';
import type { Item, Sample } from '../protocol/wire.js';
import type { BudgetUsage, RecordedCall } from '../store/records.js';
import type { Sandbox } from '../sandbox/types.js';

/** What a tool or grader knows about the rollout it serves. */
export interface RolloutView {
  traceId: string;
  item: Item;
  /** Calls recorded so far, in arrival order (for a tool: not including the current one). */
  calls(): Promise<RecordedCall[]>;
  budget(): Promise<BudgetUsage>;
}

export interface ToolContext {
  traceId: string;
  callId: string;
  item: Item;
  rollout: RolloutView;
  /**
   * True when the caller named no rollout (an MCP client without an x-rft-trace-id header or a
   * session): this call is recorded under a trace of its own and `sandbox()` refuses.
   */
  stateless?: boolean;
  log: Logger;
  /** Aborted when the tool's timeout passes or the server shuts down. */
  signal: AbortSignal;
  /** The rollout's sandbox, created on first use and shared by every call of the rollout. */
  sandbox(): Promise<Sandbox>;
}

/** A tool's handler returns a string (sent as is) or any JSON value (serialized). */
export type ToolResult = unknown;

export interface ToolDefinition<P extends z.ZodType = z.ZodType> {
  name: string;
  description: string;
  parameters: P;
  handler: (args: z.output<P>, ctx: ToolContext) => ToolResult | Promise<ToolResult>;
  /** Budget units charged per call (default 1; 0 makes the tool free). */
  cost?: number;
  timeoutMs?: number;
  maxOutputBytes?: number;
  /**
   * Calls of serial tools run one at a time per rollout, in arrival order (for tools that change
   * shared state such as the sandbox). Other tools run as soon as they arrive, even in parallel.
   */
  serial?: boolean;
  /**
   * Running it twice has the effect of running it once (it only reads). A call a server restart cut
   * while it ran is then run again on the trainer's retry; any other tool's cut call answers
   * 503 RFT_ERR_CALL_INTERRUPTED to every retry (what it did is unknown), so the rollout is dropped.
   */
  idempotent?: boolean;
}

export interface GraderResult {
  score: number;
  subscores?: Record<string, number>;
  explanation?: string;
}

export interface GraderInput {
  sample: Sample;
  item: Item;
  traceId: string;
}

export interface GraderContext {
  traceId: string;
  rollout: RolloutView;
  log: Logger;
  signal: AbortSignal;
  /** The rollout's sandbox if one exists, or a new one from the row's template (never null when sandboxes are enabled). */
  sandbox(): Promise<Sandbox>;
  /** Root folder of `item.sandbox.template` and `item.sandbox.hidden` (RFT_SANDBOX_TEMPLATES). */
  templatesRoot: string;
  /** A fresh sandbox owned by this grading run (e.g. for hidden tests); destroyed when grading ends. */
  freshSandbox(opts?: { templateDir?: string; files?: Record<string, string> }): Promise<Sandbox>;
}

export interface GraderDefinition {
  name: string;
  description: string;
  /** Declared score range; scores outside it are refused as errors. Default [0, 1]. */
  range?: [number, number];
  /** Changes whenever the grading logic changes; defaults to a hash of the file. */
  version?: string;
  /**
   * The dataset fields the grader reads, as a zod schema of the row (use z.looseObject: other fields
   * are allowed). `rft-endpoints dataset check` validates every row with it before a job is paid for.
   */
  itemSchema?: z.ZodType;
  /**
   * The grader reads the rollout's tool calls (`ctx.rollout.calls()`). Doors whose rollouts carry no tool
   * calls (the reward door: a finished answer, no rollout of ours) refuse it with RFT_ERR_GRADER_READS_CALLS
   * rather than grade it on an empty list. Undeclared, it is inferred from the file (a `.calls(` in its
   * code); `false` says the grader handles a rollout without calls itself.
   */
  readsCalls?: boolean;
  handler: (input: GraderInput, ctx: GraderContext) => number | GraderResult | Promise<number | GraderResult>;
}

const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;

export function defineTool<P extends z.ZodType>(def: ToolDefinition<P>): ToolDefinition<P> {
  return Object.freeze({ ...def, __kind: 'tool' }) as ToolDefinition<P>;
}

export function defineGrader(def: GraderDefinition): GraderDefinition {
  return Object.freeze({ ...def, __kind: 'grader' }) as GraderDefinition;
}

export function isValidUnitName(name: unknown): name is string {
  return typeof name === 'string' && TOOL_NAME.test(name);
}
