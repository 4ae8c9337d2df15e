// Integrity flags: the server sees what a rollout tried, so it says so. A policy that learns to
// reach outside its sandbox (for hidden tests, another process's memory, the host) or to score
// without doing the task is reward hacking in the making; each attempt is recorded on the rollout,
// counted in rft_integrity_flags_total{kind} and shown on the dashboard, per grader version. One kind
// is the dataset's, not the policy's: bad_row, a row the grader refused to score (not trained on).
import { constants } from 'node:os';
import type { Logger } from 'pino';
import type { Item } from '../protocol/wire.js';
import type { ExecResult } from '../sandbox/types.js';
import type { Metrics } from '../metrics/metrics.js';
import type { Store } from '../store/types.js';

export const INTEGRITY_KINDS = ['path_escape', 'hidden_path', 'denied_syscall', 'no_tool_score', 'bad_row'] as const;
export type IntegrityKind = (typeof INTEGRITY_KINDS)[number];

/** How each kind is detected (the README's table and the dashboard's legend). */
export const INTEGRITY_DETECTION: Readonly<Record<IntegrityKind, string>> = {
  path_escape:
    'a tool refused a path outside the workspace (RFT_ERR_PATH_ESCAPE: "..", an absolute path, a symlink out of it) — ' +
    'thrown by the sandbox file operations and the shipped workspace tools',
  hidden_path:
    "a tool refused a path into the task's hidden grading folder (RFT_ERR_HIDDEN_PATH: item.sandbox.hidden lying inside " +
    'item.sandbox.template, whose files never enter the workspace)',
  denied_syscall:
    'a sandbox command was killed by SIGSYS, the signal of a seccomp filter that kills or traps (the driver sees the ' +
    'exit signal, or status 159 = 128 + SIGSYS from bwrap or a shell); a filter that answers EPERM is invisible from ' +
    'outside and is not flagged',
  no_tool_score:
    'a grade scored above the bottom of its range on a rollout with no tool call, although its row needs tools ' +
    '(item.requires_tools, else a non-empty item.tools or an item.sandbox)',
  bad_row:
    "the row did not match the grader's itemSchema (a field it reads is missing or of the wrong type): the grade was " +
    'refused with RFT_ERR_BAD_ROW (a 5xx, so the trainer drops the rollout) instead of a false zero; the dataset needs fixing, not the model',
};

/** The error codes by which a tool refuses an attempt to leave the sandbox. */
const KIND_OF_CODE: Readonly<Record<string, IntegrityKind>> = {
  RFT_ERR_PATH_ESCAPE: 'path_escape',
  RFT_ERR_HIDDEN_PATH: 'hidden_path',
};

export function integrityKindOfError(e: unknown): IntegrityKind | undefined {
  const code = (e as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? KIND_OF_CODE[code] : undefined;
}

const SIGSYS = constants.signals.SIGSYS;

/**
 * A command killed by SIGSYS, the signal of a seccomp filter that kills or traps: as an exit signal,
 * or as the status 128 + SIGSYS by which bwrap and shells report a child killed by it.
 */
export function deniedSyscall(r: ExecResult): boolean {
  return r.signal === 'SIGSYS' || r.exitCode === 128 + SIGSYS;
}

/**
 * Whether the row's task needs tools: `requires_tools` when the row says so, else whether it offers
 * tools (a Chat Completions `tools` list) or a sandbox to work in.
 */
export function needsTools(item: Item): boolean {
  if (typeof item.requires_tools === 'boolean') return item.requires_tools;
  return (Array.isArray(item.tools) && item.tools.length > 0) || (typeof item.sandbox === 'object' && item.sandbox !== null);
}

const DETAIL_MAX = 500;

export class IntegrityFlags {
  constructor(
    private readonly o: { store: Pick<Store, 'addFlag'>; metrics?: Metrics | undefined; log: Logger },
  ) {}

  /**
   * Records a flag on the rollout (a count per kind, with the first occurrence's call and detail).
   * Never fails the request that raised it: a flag that cannot be written is logged.
   */
  async record(traceId: string, kind: IntegrityKind, detail: string, callId?: string): Promise<void> {
    this.recorded(traceId, kind, callId);
    try {
      await this.o.store.addFlag({ traceId, kind, callId: callId ?? null, detail: detail.slice(0, DETAIL_MAX), at: Date.now() });
    } catch (e) {
      this.o.log.error({ err: e, trace_id: traceId, integrity: kind }, 'could not record an integrity flag');
    }
  }

  /** Counts and logs a flag the store recorded itself (a grade's no_tool_score, in the grade's commit). */
  recorded(traceId: string, kind: IntegrityKind, callId?: string): void {
    this.o.metrics?.integrityFlag(kind);
    this.o.log.warn({ trace_id: traceId, call_id: callId, integrity: kind }, `integrity flag: ${kind}`);
  }
}
