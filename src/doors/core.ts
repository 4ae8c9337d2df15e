// The core every door calls, in no wire format: start a rollout (from a dataset row), call a tool
// (rollout, exactly-once key, name, arguments) and get an observation, grade (rollout, answer, row)
// and get a score with subscores, end the rollout. It is the ledger and the grading service as they
// are (exactly-once, budgets, sandboxes, the record): a door only translates its trainer's wire.
import type { Logger } from 'pino';
import { errors, isRftError, type RftError } from '../errors.js';
import type { Item, Sample } from '../protocol/wire.js';
import { answerSample, type AnswerLimits } from '../protocol/json-or-null.js';
import { valueDepthExceeds } from '../protocol/json-depth.js';
import { rowProblems } from '../grading-service/service.js';
import type { Environment, Environments } from '../environments/environment.js';
import type { LoadedGrader, Registry } from '../registry/loader.js';
import { defaultGrader } from '../registry/loader.js';
import type { Ledger, ToolCallOutcome } from '../ledger/ledger.js';
import type { GradingService } from '../grading-service/service.js';
import type { SandboxProvider } from '../sandbox/provider.js';
import type { Sandbox } from '../sandbox/types.js';
import { budgetFromItem } from '../rollout/budget.js';
import type { Store, WriteDurability } from '../store/types.js';
import { harborEnvironmentOf } from '../harbor/registry.js';

export interface CoreServices {
  registry: Registry;
  ledger: Ledger;
  grading: GradingService;
  store: Store;
  sandboxes: SandboxProvider | undefined;
  environments: Environments;
  defaultBudget: number;
  defaultGrader: string | undefined;
  log: Logger;
  /** The caps an answer's JSON is parsed under and a row's depth (RFT_BODY_LIMIT_BYTES, RFT_MAX_JSON_DEPTH). */
  limits: AnswerLimits;
}

/** A rollout as the core runs it: its record's trace id, the row, what it may call and what grades it. */
export interface Rollout {
  traceId: string;
  door: string;
  /** The dataset row: budget, sandbox and the grader's fields (the grader's `item`). */
  row: Item;
  environment: string | undefined;
  /** The only tools this rollout may call. */
  tools: ReadonlySet<string>;
  grader: LoadedGrader;
  /** The run label it came with: a grade creating its record (the reward door's) records it there. */
  run?: string | undefined;
  /** When its grade's record is answered (src/store/types.ts WriteDurability; default durable). */
  durability?: WriteDurability | undefined;
}

export interface StartRollout {
  traceId: string;
  door: string;
  row: Item;
  /** The tools the row offers the model; each must be the environment's (when there is one). */
  tools: readonly string[];
  /** Pin the environment; else the one whose tools hold the row's, if exactly one does. */
  environment?: string | undefined;
  /** Start building the rollout's sandbox now (the row names one): the model's first turn hides its cost. */
  warmSandbox?: boolean;
  /** The run label the door's session came with (src/protocol/run-label.ts). */
  run?: string | undefined;
}

/**
 * Told when a rollout started with `warmSandbox` has its sandbox, before any tool call of it needs
 * to: what else the rollout will need can start then too (the MCP bridge's per-rollout instances,
 * wired in app.ts). Not awaited; what it starts is its own to log and clean up.
 */
export type SandboxReadyListener = (rollout: Rollout, sandbox: Sandbox) => void;

export interface Grade {
  score: number;
  subscores: Record<string, number>;
  grader: string;
  replayed: boolean;
}

/**
 * Whose failure a thrown error is, by the step it came from (docs/door-failures.md): the model's (a tool
 * call it got wrong: an observation it reads; its answer is never a failure, it is scored), the row's (the
 * dataset or the trainer's input: the protocol's bad-input reply, at the rollout's start where there is
 * one) or ours (the store, a sandbox, a grader that could not score: the protocol's retry or discard
 * signal, never a score). Doors translate the class; they do not decide it.
 */
export type FailureClass = 'model' | 'row' | 'ours';

// A row naming a Harbor task this server does not serve is the row's even at a tool call (its sandbox is made on first use).
const ROW_CODES: ReadonlySet<string> = new Set([errors.rowUnreadable.code, errors.rowTooDeep.code, errors.badRow.code, errors.bodyTooDeep.code, errors.harborUnknownTask.code]);

export function failureClass(e: unknown, step: 'start' | 'call' | 'grade'): FailureClass {
  if (!isRftError(e)) return 'ours';
  if (ROW_CODES.has(e.code)) return 'row';
  if (e.statusCode >= 500) return 'ours';
  return step === 'call' ? 'model' : 'row';
}

/** An error of ours that is the grader's: it ran and could not score (NeMo Gym's doors call it judge_failed). */
export function graderCouldNotScore(e: unknown): e is RftError {
  return isRftError(e) && (e.code === errors.graderFailed.code || e.code === errors.graderBadScore.code);
}

/**
 * How an episode ended without an answer (docs/door-failures.md, Episodes that end without an answer): its
 * client ended it (OpenEnv's next reset, close frame or dropped socket; ORS's /delete), it sat idle past its
 * door's limit, or we ended it (our shutdown). `lastUsed`: its last request or frame before the end; one from
 * before this process served means our crash or restart lies between (the client's end may be its reaction).
 */
export type UnansweredEnd = { by: 'client' | 'idle'; lastUsed: number } | { by: 'ours' };

/** What a door knows of an episode at its end: the facts the rule reads (the door decides nothing). */
export interface EpisodeAtEnd {
  /** It was submitted or otherwise graded (a spent budget), or a grade of it is under way. */
  answered: boolean;
  /** A failure of ours broke it: lost, not played. */
  broken: boolean;
}

/** The answer an episode that ends without one is graded with (what a spent budget gets). */
export const NO_ANSWER = '';

export class DoorCore {
  private readonly sandboxReady: SandboxReadyListener[] = [];
  /** When this process began serving: an episode idle since before then may have been idle because we were down. */
  private readonly since = Date.now();

  constructor(private readonly s: CoreServices) {}

  onSandboxReady(listener: SandboxReadyListener): void {
    this.sandboxReady.push(listener);
  }

  private environmentOf(input: StartRollout): Environment | undefined {
    const { environments } = this.s;
    if (input.environment !== undefined) return environments.get(input.environment);
    // A Harbor row names its environment with its task (the harness tools are coding's too: they cannot tell).
    const harbor = harborEnvironmentOf(input.row);
    if (harbor !== undefined && environments.list().some((e) => e.name === harbor)) return environments.get(harbor);
    return environments.forTools(input.tools);
  }

  /**
   * Checks the row against its environment and opens its record (door, row, budget). `alongside`, given the
   * rollout, writes what the door keeps of it (its session) in the same turn as the record's opening: one
   * commit, one fsync, not two in a row (issue 41: one session at a time). Both are awaited; either failing
   * fails the start (a session whose rollout did not open is never handed out: the door answers 5xx).
   */
  async start(input: StartRollout, alongside?: (rollout: Rollout) => Promise<unknown>): Promise<Rollout> {
    const { registry, environments } = this.s;
    const env = this.environmentOf(input);
    // With environments, a row belongs to one: tools of several (finqa's and coding's) never mix.
    if (!env && environments.list().length > 0) {
      throw errors.badRequest(`the row's tools (${input.tools.join(', ') || 'none'}) are not those of one environment (${environments.list().map((e) => e.name).join(', ')})`, {
        tools: input.tools,
      });
    }
    const outside = input.tools.filter((t) => !registry.tools.has(t) || (env && !env.tools.includes(t)));
    if (outside.length > 0) {
      throw errors.badRequest(`the row offers tools that ${env ? `environment "${env.name}" does not have` : 'this server does not have'}: ${outside.join(', ')}`, {
        tools: outside,
      });
    }
    const grader = this.graderOf(env);
    try {
      this.checkRow(input.row, grader);
    } catch (e) {
      // The dataset's to fix, and no record holds it: the log is where an operator sees which row.
      this.s.log.warn({ err: e, trace_id: input.traceId, door: input.door, environment: env?.name }, 'row refused at the rollout\'s start');
      throw e;
    }
    const rollout: Rollout = { traceId: input.traceId, door: input.door, row: input.row, environment: env?.name, tools: new Set(input.tools), grader, run: input.run };
    const opened = this.s.store.openRollout(input.traceId, input.door, input.row, budgetFromItem(input.row, this.s.defaultBudget), Date.now(), input.run).catch((e: unknown) => {
      throw errors.store((e as Error).message);
    });
    const kept = alongside?.(rollout);
    // (both settle before the start answers: a failure of one is never left running behind it)
    const [o, k] = await Promise.allSettled([opened, kept]);
    if (o.status === 'rejected') throw o.reason;
    if (k.status === 'rejected') throw k.reason;
    const { sandboxes } = this.s;
    if (input.warmSandbox && sandboxes && typeof input.row.sandbox === 'object' && input.row.sandbox !== null) {
      // Not awaited: a failure here is the first tool call's to meet (acquire runs again there).
      sandboxes.acquire(input.traceId, input.row).then(
        (sandbox) => this.sandboxAcquired(rollout, sandbox),
        (e: unknown) => this.s.log.warn({ err: e, trace_id: input.traceId }, 'sandbox built ahead failed'),
      );
    }
    return rollout;
  }

  private graderOf(env: Environment | undefined): LoadedGrader {
    const { registry } = this.s;
    const graderName = env?.grader ?? defaultGrader(registry, this.s.defaultGrader);
    const grader = graderName === undefined ? undefined : registry.graders.get(graderName);
    if (!grader) throw errors.unknownGrader(graderName ?? '(default)', [...registry.graders.keys()]);
    return grader;
  }

  /** The store, where doors keep their sessions (any replica serves them; a restart keeps them). */
  get store(): Store {
    return this.s.store;
  }

  /**
   * A rollout started earlier, by this process or another replica, as its door's session recorded it:
   * its record is open already, so nothing is written.
   */
  resume(r: Omit<Rollout, 'grader' | 'tools'> & { tools: readonly string[] }): Rollout {
    const env = r.environment === undefined ? undefined : this.s.environments.get(r.environment);
    return { traceId: r.traceId, door: r.door, row: r.row, environment: env?.name, tools: new Set(r.tools), grader: this.graderOf(env) };
  }

  private sandboxAcquired(rollout: Rollout, sandbox: Sandbox): void {
    for (const listener of this.sandboxReady) {
      try {
        listener(rollout, sandbox);
      } catch (e) {
        this.s.log.warn({ err: e, trace_id: rollout.traceId }, 'work started with the sandbox ahead failed');
      }
    }
  }

  /**
   * Runs a tool call once per (rollout, key) through the ledger. A tool the rollout does not offer is
   * RFT_ERR_UNKNOWN_TOOL (404); the outcome says whether the model's arguments were refused.
   */
  callTool(r: Rollout, key: string, name: string, args: unknown, credential: string | null = null): Promise<ToolCallOutcome> {
    const tool = r.tools.has(name) ? this.s.registry.tools.get(name) : undefined;
    if (!tool) throw errors.unknownTool(name, [...r.tools]);
    return this.s.ledger.call(tool, { traceId: r.traceId, callId: key, arguments: args, item: r.row, credential });
  }

  /**
   * Refuses, with the row's coded 400, a trainer's input nested deeper than RFT_MAX_JSON_DEPTH: what a
   * door's listener does not check itself (the main listener's body parser does), before anything
   * recursive (the store's JSON, a reply's serializer) walks it.
   */
  checkDepth(value: unknown, where: string): void {
    const max = this.s.limits.maxDepth;
    if (valueDepthExceeds(value, max)) throw errors.rowTooDeep(where, max);
  }

  /**
   * Refuses a row its grader cannot grade (its itemSchema) or nested too deep, with a coded 400: at the
   * rollout's start, so a rollout is never played for a grade that cannot come (the grading service would
   * refuse it then with RFT_ERR_BAD_ROW, a 5xx). A door without a start (the reward door) checks the depth
   * alone and lets the grade refuse the rest, where it is recorded and flagged bad_row.
   */
  checkRow(row: Item, grader: LoadedGrader): void {
    this.checkDepth(row, 'the row');
    const problems = rowProblems(grader, row);
    if (problems !== undefined) throw errors.rowUnreadable(grader.def.name, problems);
  }

  /** The sample of an answer given as text: parsed once, here, under the server's caps (deeper: graded as its text). */
  answer(text: string): Sample {
    return answerSample(text, this.s.limits);
  }

  /**
   * Grades the answer (its text, or a sample) once (a retry of the same answer gets the recorded grade);
   * failures throw coded errors. The answer is the model's: however it is nested, it is scored.
   */
  async grade(r: Rollout, answer: Sample | string, credential: string | null = null): Promise<Grade> {
    const sample = typeof answer === 'string' ? this.answer(answer) : answer;
    const { record, replayed } = await this.s.grading.grade(r.grader, {
      sample, item: r.row, traceId: r.traceId, credential, source: 'endpoint', door: r.door, run: r.run, durability: r.durability,
    });
    if (record.score === null) throw errors.graderFailed(r.grader.def.name, 'no score was recorded');
    return { score: record.score, subscores: record.subscores ?? {}, grader: r.grader.def.name, replayed };
  }

  /**
   * The rule of every door for an episode that ends without an answer: graded with the empty answer when the
   * trainer trains on it (TRL's OpenRewardSpec starts each rollout's reward at 0.0 and keeps the last non-null
   * one; SkyRL counts a null reward as 0; TRL's OpenEnv loop calls get_reward), so a model cannot escape a 0 by
   * abandoning an episode; never when the end is ours (a shutdown, or an episode last used before this process
   * served: our restart or crash lies between) or a failure of ours broke it: infrastructure is never charged
   * to the model.
   */
  gradesUnanswered(end: UnansweredEnd, episode: EpisodeAtEnd): boolean {
    if (episode.answered || episode.broken || end.by === 'ours') return false;
    return end.lastUsed >= this.since;
  }

  /**
   * Ends an episode that has no answer by the rule above: its grade with the empty answer (recorded once: a
   * retried end gets the recorded grade), or undefined when it stays ungraded. A grade failing throws (ours).
   */
  async endUnanswered(r: Rollout, end: UnansweredEnd, episode: EpisodeAtEnd): Promise<Grade | undefined> {
    if (!this.gradesUnanswered(end, episode)) return undefined;
    return this.grade(r, NO_ANSWER);
  }

  /** Ends the rollout now (its sandbox goes); a graded one ends by itself after the grace period. */
  async end(r: Pick<Rollout, 'traceId'>): Promise<void> {
    await this.s.sandboxes?.destroy(r.traceId);
  }
}
