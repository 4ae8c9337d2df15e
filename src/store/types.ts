// The Store: everything durable. SQLite (one process) is the default; the interface is async and
// free of SQLite types so a Postgres implementation (many replicas) can stand behind it.
import type { Replicas } from './replicas.js';
import type { BudgetUsage, CallStatus, GradeRecord, RecordedCall, RolloutRecord, RolloutSummary } from './records.js';
import type { ListRolloutsQuery, NewFlag, StatsQuery, StatsRows } from '../stats/insights.js';

export type { ListRolloutsQuery };

export interface BeginCallInput {
  traceId: string;
  callId: string;
  tool: string;
  arguments: string;
  argsHash: string;
  cost: number;
  /** Budget for the rollout if this call creates it (later calls use the stored limit). */
  budgetLimit: number;
  /** The dataset row, stored with the rollout when this call creates it. */
  item: Record<string, unknown> | null;
  credential: string | null;
  now: number;
  /**
   * Output recorded when the budget is spent (the call then does not run). The store writes the
   * rollout's stored limit (the one it enforced) in place of LIMIT_PLACEHOLDER: `budgetLimit` is
   * only this call's row's, which a later call may not share.
   */
  overBudgetOutput: string;
}

/** Stands for the enforced budget limit in BeginCallInput.overBudgetOutput. */
export const LIMIT_PLACEHOLDER = '{limit}';

export type BeginCallResult =
  | { kind: 'started'; call: RecordedCall; budget: BudgetUsage }
  | { kind: 'over_budget'; call: RecordedCall; budget: BudgetUsage }
  | { kind: 'existing'; call: RecordedCall }
  | { kind: 'conflict'; call: RecordedCall };

export interface FinishCallInput {
  output: string;
  status: Exclude<CallStatus, 'running'>;
  finishedAt: number;
  durationMs: number;
  outputBytes: number;
  truncated: boolean;
  /** Id of the sandbox the call used (RecordedCall.sandbox); absent when it used none. */
  sandbox?: string | null;
}

export interface NewGrade extends Omit<GradeRecord, 'id'> {
  sample: unknown;
}

/**
 * When a write is answered (src/store/README.md, "Fsync policy"). `durable` (every write but the ones named
 * `committed`): once it is on disk, as RFT_SQLITE_SYNC says (SQLite `full`: the WAL fsynced; Postgres: its
 * synchronous_commit); a write an exactly-once retry or a budget depends on is always durable. `committed`:
 * once committed, without waiting for its own fsync: SQLite has it in the WAL before the reply (it survives
 * `kill -9`, not a power loss); Postgres commits it with synchronous_commit off (it survives a crash of our
 * process, a Postgres crash may lose the last few hundred ms). Only for a record no promise depends on: the
 * reward door's grade (a rollout of its own, no retry key, no budget).
 */
export type WriteDurability = 'durable' | 'committed';

/** The rollout a grade belongs to: created, or its empty dataset row filled, in the grade's commit (see ensureRollout). */
export interface GradedRollout {
  item: Record<string, unknown> | null;
  budgetLimit: number;
  now: number;
  /** A flag (no_tool_score) recorded with the grade if the rollout has no recorded tool call. */
  flagIfNoCalls?: NewFlag | undefined;
  /** The run label the grade came with: the rollout's if it has none yet. */
  run?: string | undefined;
  /** The door the rollout came through, if the grade's commit creates it (an existing rollout keeps its own). */
  door?: string | undefined;
  /** When the grade's commit is answered (default durable). */
  durability?: WriteDurability | undefined;
}

/** A recorded grade, and its rollout's tally after it (absent if the rollout has no row). */
export interface InsertedGrade {
  record: GradeRecord;
  tally: RolloutTally | undefined;
}

export interface GradeWithSample extends GradeRecord {
  sample: unknown;
}

/** What the grading service needs of a rollout it graded: its calls so far and whether its budget ran out. */
export interface RolloutTally {
  calls: number;
  budgetExceeded: boolean;
}

export interface ImportedRollout {
  traceId: string;
  /** The door that opened it (absent: Agent RFT's). */
  door?: string | undefined;
  /** Its run label (absent: none). */
  run?: string | undefined;
  createdAt: number;
  updatedAt: number;
  item: Record<string, unknown> | null;
  budget: BudgetUsage;
  calls: Omit<RecordedCall, 'traceId'>[];
  grades: Omit<NewGrade, 'traceId'>[];
}

/**
 * A door's session (NeMo Gym's cookie, ORS's sid, OpenEnv's session id) as the record keeps it, so any
 * replica serves it and a restart keeps it: what it runs (its rollout's trace id, environment, tools)
 * and the door's own state (sequence numbers, exactly-once and end state: JSON the door reads),
 * replaced whole by a compare-and-set on `version`.
 */
export interface DoorSessionRecord {
  door: string;
  /** Its id in its door: never a credential (a token's hash stands for it). */
  id: string;
  traceId: string;
  environment: string | null;
  tools: string[];
  run: string | null;
  /** The door's state (JSON). */
  state: string;
  /** Bumped by every update: an update from an older version is refused. */
  version: number;
  /** Graded or otherwise over (its state says how). */
  ended: boolean;
  createdAt: number;
  /** For the TTL: set on creation and by each update. */
  lastUsed: number;
}

export interface SessionChange {
  state: string;
  ended?: boolean;
  /** A session whose rollout starts after it (ORS's): what it was started with. */
  bound?: { environment: string | null; tools: string[] };
}

export type NewDoorSession = Omit<DoorSessionRecord, 'version' | 'ended' | 'lastUsed'>;

/** A session as read: with its rollout's dataset row as recorded (null if it has none). */
export interface StoredDoorSession extends DoorSessionRecord {
  item: Record<string, unknown> | null;
}

export interface Store {
  readonly kind: string;
  /**
   * Coordination of replicas sharing this store (Postgres): sandbox placements and the order of
   * serial calls across them. Absent where one process owns the store (SQLite): both stay in memory.
   */
  readonly replicas?: Replicas;
  beginCall(input: BeginCallInput): Promise<BeginCallResult>;
  /**
   * Un-begins a started call that failed on our side (a sandbox or store failure inside its tool):
   * in one commit, removes its row and gives its cost back to the rollout's budget, only if the row
   * is still running and is this attempt's (`seq`, which is never reused in a rollout). The call id
   * is then free: the trainer's retry runs it. True if it removed the row; repeating it is harmless.
   */
  unbeginCall(traceId: string, callId: string, seq: number, now: number): Promise<boolean>;
  /** Records a started call's result (once: a finished call keeps its first result). */
  finishCall(traceId: string, callId: string, result: FinishCallInput): Promise<void>;
  getCall(traceId: string, callId: string): Promise<RecordedCall | undefined>;
  listCalls(traceId: string): Promise<RecordedCall[]>;
  /** The rollout's budget, or the given default if the rollout has no call yet. */
  getBudget(traceId: string, defaultLimit: number): Promise<BudgetUsage>;
  /**
   * Creates the rollout row if absent (a grader call for a rollout with no tool call), and records
   * `item` if the rollout has none or an empty one: the trainer may send `item: {}` with tool calls,
   * while the grader call carries the full row (which regrade needs). A non-empty row is kept.
   */
  ensureRollout(traceId: string, item: Record<string, unknown> | null, budgetLimit: number, now: number): Promise<void>;
  /** As ensureRollout, and records the door the rollout came through (src/doors): a door that opens its rollouts. */
  openRollout(traceId: string, door: string, item: Record<string, unknown> | null, budgetLimit: number, now: number, run?: string): Promise<void>;
  /**
   * Labels an existing rollout with its run, unless it has a label already (the first one is kept):
   * the ledger's, on a rollout's first tool call that came with one.
   */
  labelRollout(traceId: string, run: string): Promise<void>;

  findGrade(traceId: string, grader: string, graderVersion: string, sampleHash: string): Promise<GradeRecord | undefined>;
  /**
   * Records a grade, with its rollout and the rollout's flag if given (one commit), and returns the
   * record (it carries the sample) and the rollout's tally after it.
   */
  insertGrade(grade: NewGrade, rollout?: GradedRollout): Promise<InsertedGrade>;
  listGrades(traceId: string): Promise<GradeWithSample[]>;

  listRollouts(q: ListRolloutsQuery): Promise<{ rollouts: RolloutSummary[]; nextCursor: string | null }>;
  getRollout(traceId: string): Promise<(RolloutRecord & { grades: GradeWithSample[] }) | undefined>;
  importRollout(r: ImportedRollout): Promise<'imported' | 'exists'>;

  /** Records an integrity flag on a rollout (one row per kind, counting its events). */
  addFlag(f: NewFlag): Promise<void>;
  rolloutTally(traceId: string): Promise<RolloutTally | undefined>;
  /** The dashboard's figures for a time window (src/stats/insights.ts). */
  stats(q: StatsQuery): Promise<StatsRows>;

  /**
   * Records a webhook-id with its body's hash; false if the id was seen with another body and has
   * not expired. The same id with the same body is accepted again: that is the sender's retry.
   */
  rememberWebhookId(id: string, bodyHash: string, expiresAt: number, now: number): Promise<boolean>;
  /**
   * At boot: calls left 'running' by a crash are closed, in one commit, and their cost goes back to
   * their rollouts' budgets (the crash was ours, never the model's to pay for): those of the tools in
   * `rerunTools` (idempotent) are un-begun, as a failure of ours is (their retry runs them), the
   * others become 'interrupted' with `output` (never run again). Returns how many became interrupted.
   */
  markInterrupted(output: string, now: number, rerunTools?: readonly string[]): Promise<number>;
  /**
   * Records that the server process `boot` made the rollout's sandbox, unless one is recorded, and
   * returns the recorded boot: another one means an earlier process made it, so it did not survive
   * that process (a crash or a restart) and its workspace is gone (src/sandbox/manager/manager.ts).
   */
  claimSandbox(traceId: string, boot: string, now: number): Promise<string>;
  /** The boot claimSandbox recorded for the rollout, if any. */
  sandboxBoot(traceId: string): Promise<string | undefined>;
  /**
   * Records a new session (its rollout is opened first, by openRollout). `durability` (default durable):
   * 'committed' for a session no promise depends on until its next durable write (ORS's bare
   * `/create_session`: no rollout, no retry key; the next write's fsync covers it).
   */
  createSession(s: NewDoorSession, durability?: WriteDurability): Promise<void>;
  getSession(door: string, id: string): Promise<StoredDoorSession | undefined>;
  /**
   * Replaces the session's state (sets `ended` if asked: it is never unset; records the environment and
   * tools its rollout got, if given) if its version is still `version`, and marks it used at `now`:
   * false if another update came first (or it is gone).
   */
  updateSession(door: string, id: string, version: number, change: SessionChange, now: number): Promise<boolean>;
  /**
   * Removes a session; the removed one, if it was there. `durability` 'committed' when nothing depends on
   * the removal outliving a power loss (its episode's end, if any, was recorded durably before).
   */
  deleteSession(door: string, id: string, durability?: WriteDurability): Promise<DoorSessionRecord | undefined>;
  /** Removes the door's sessions last used before `before` (at most `limit`), and returns them. */
  expireSessions(door: string, before: number, limit: number): Promise<DoorSessionRecord[]>;
  /** Throws if the store cannot write (readiness). */
  ping(): Promise<void>;
  close(): Promise<void>;
}
