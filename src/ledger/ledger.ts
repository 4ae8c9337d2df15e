// The ledger runs each tool call exactly once per (trace_id, call_id): the store's begin
// transaction decides (run / replay / refuse / conflict) and charges the budget atomically; this
// module adds what a transaction cannot: waiting for a duplicate that is still running, and
// per-rollout ordering of serial tools.
import type { Logger } from 'pino';
import { errors, isRftError, type RftError } from '../errors.js';
import { canonicalJson, sha256 } from '../protocol/canonical.js';
import { jsonDepthExceeds } from '../protocol/json-depth.js';
import type { Item } from '../protocol/wire.js';
import type { LoadedTool } from '../registry/loader.js';
import type { RolloutView, ToolContext } from '../registry/define.js';
import type { Sandbox } from '../sandbox/types.js';
import { LIMIT_PLACEHOLDER, type FinishCallInput, type Store } from '../store/types.js';
import type { CallStatus, RecordedCall } from '../store/records.js';
import type { SandboxProvider } from '../sandbox/provider.js';
import { formatZodIssues, truncateOutput } from './output.js';
import { budgetFromItem, toolBudgetProblem } from '../rollout/budget.js';
import { rolloutView } from '../rollout/view.js';
import type { Metrics } from '../metrics/metrics.js';
import { failureOfToolError, markFailureCounted, outcomeOf, OUTCOME_FAILURE, type Failure } from '../metrics/outcomes.js';
import { integrityKindOfError, type IntegrityFlags, type IntegrityKind } from '../integrity/flags.js';

export interface LedgerOptions {
  store: Store;
  sandboxes: SandboxProvider | undefined;
  defaultBudget: number;
  defaultTimeoutMs: number;
  defaultMaxOutputBytes: number;
  /** Deepest nesting of a call's `arguments` (the model writes them: too deep is its mistake, an observation). */
  maxJsonDepth?: number;
  log: Logger;
  /** Aborted at shutdown: running handlers see it through ctx.signal. */
  shutdown: AbortSignal;
  metrics?: Metrics | undefined;
  /** Where a call that tried to leave its sandbox is flagged. */
  integrity?: IntegrityFlags | undefined;
  /** Names of the serial tools (their order across replicas is kept through the store). */
  serialTools?: () => readonly string[];
  /** Names of the idempotent tools: a call of one that a restart cut runs again on its retry. */
  idempotentTools?: () => readonly string[];
}

/**
 * Longest wait for another replica's earlier serial call of the same rollout: past the trainer's
 * 10 minutes per call, that call's replica is stuck, and the rollout goes on without it.
 */
const SERIAL_WAIT_MS = 11 * 60_000;

export interface ToolCallInput {
  traceId: string;
  callId: string;
  /** The raw `arguments` field: a JSON string or an object. */
  arguments: unknown;
  item: Item;
  credential: string | null;
  /**
   * The caller named no rollout (an MCP client with neither an x-rft-trace-id header nor a
   * session): the call has a trace of its own, and ctx.sandbox() refuses with a tool error.
   */
  stateless?: boolean;
  /** The run label the call came with (x-rft-run): given to the rollout on its first call. */
  run?: string | undefined;
}

export interface ToolCallOutcome {
  output: string;
  status: CallStatus;
  /** true when this reply is a recorded result, not a new run. */
  replayed: boolean;
  seq: number;
  /** The handler's time, when this reply ran it. */
  handlerMs?: number;
  /** Whose failure a tool_error was (the tool's throw decides), when this reply ran the handler. */
  failure?: Failure;
}

const WAIT_POLL_MS = 25;
/** How often a wait for a call running on another replica checks that the replica is still there. */
const ORPHAN_CHECK_MS = 1_000;

/**
 * What the record of a call a restart cut says (for operators: never a reply; its retries answer
 * RFT_ERR_CALL_INTERRUPTED, and its cost went back to the budget).
 */
export const INTERRUPTED_OUTPUT =
  'interrupted by a server restart before it completed: not run again, not shown to the model, not charged';

export class Ledger {
  private readonly inflight = new Map<string, Promise<ToolCallOutcome>>();
  private readonly serialTails = new Map<string, Promise<unknown>>();

  constructor(private readonly o: LedgerOptions) {}

  rolloutView(traceId: string, item: Item, excludeCallId?: string): RolloutView {
    return rolloutView(this.o.store, this.o.defaultBudget, traceId, item, excludeCallId);
  }

  async call(tool: LoadedTool, input: ToolCallInput): Promise<ToolCallOutcome> {
    const key = `${input.traceId}\0${input.callId}`;
    const running = this.inflight.get(key);
    if (running) {
      // Same process, same call, still running: wait for it, but still check it is the same call.
      const outcome = await running;
      await this.assertSameCall(tool, input);
      return this.counted(tool.def.name, { output: outcome.output, status: outcome.status, replayed: true, seq: outcome.seq });
    }
    const p = this.callOnce(tool, input);
    this.inflight.set(key, p);
    try {
      return this.counted(tool.def.name, await p);
    } finally {
      this.inflight.delete(key);
    }
  }

  private counted(tool: string, o: ToolCallOutcome): ToolCallOutcome {
    const metrics = this.o.metrics;
    if (metrics && o.status !== 'running') {
      const outcome = outcomeOf(o.status, o.replayed);
      metrics.toolCall(tool, outcome, o.handlerMs === undefined ? undefined : o.handlerMs / 1000, o.failure ?? OUTCOME_FAILURE[outcome]);
    }
    return o;
  }

  private parseArguments(raw: unknown): { canonical: string; value: unknown; error?: string } {
    if (raw === undefined || raw === null || raw === '') return { canonical: '{}', value: {} };
    if (typeof raw !== 'string') return { canonical: canonicalJson(raw), value: raw };
    const maxDepth = this.o.maxJsonDepth ?? 64;
    if (jsonDepthExceeds(raw, maxDepth)) {
      return { canonical: raw, value: undefined, error: `arguments nest arrays and objects more than ${maxDepth} levels deep` };
    }
    try {
      const value: unknown = JSON.parse(raw);
      return { canonical: canonicalJson(value), value };
    } catch (e) {
      return { canonical: raw, value: undefined, error: `arguments are not valid JSON (${(e as Error).message})` };
    }
  }

  private async assertSameCall(tool: LoadedTool, input: ToolCallInput): Promise<void> {
    const args = this.parseArguments(input.arguments);
    const recorded = await this.o.store.getCall(input.traceId, input.callId);
    if (recorded && recorded.argsHash !== sha256(tool.def.name, args.canonical)) throw errors.callConflict(input.callId);
  }

  private async callOnce(tool: LoadedTool, input: ToolCallInput): Promise<ToolCallOutcome> {
    const { store } = this.o;
    const def = tool.def;
    const args = this.parseArguments(input.arguments);
    const cost = def.cost ?? 1;
    const limit = budgetFromItem(input.item, this.o.defaultBudget);
    let begin;
    try {
      begin = await store.beginCall({
        traceId: input.traceId,
        callId: input.callId,
        tool: def.name,
        arguments: args.canonical,
        argsHash: sha256(def.name, args.canonical),
        cost,
        budgetLimit: limit,
        item: input.item,
        credential: input.credential,
        now: Date.now(),
        overBudgetOutput: `Tool budget exhausted: this rollout may use ${LIMIT_PLACEHOLDER} tool-call unit(s) and has no budget left for "${def.name}" (cost ${cost}). The tool was not run. Give your final answer with what you have.`,
      });
    } catch (e) {
      throw isRftError(e) ? e : errors.store((e as Error).message);
    }

    if (begin.kind !== 'existing' && begin.kind !== 'conflict' && begin.call.seq === 1) {
      this.warnOnBadBudget(input);
      if (input.run !== undefined) await this.label(input.traceId, input.run);
    }
    switch (begin.kind) {
      case 'conflict':
        throw errors.callConflict(input.callId);
      case 'existing':
        return this.replay(begin.call, def.timeoutMs ?? this.o.defaultTimeoutMs, def.name);
      case 'over_budget':
        return { output: begin.call.output ?? '', status: 'budget_exceeded', replayed: false, seq: begin.call.seq };
      case 'started':
        break;
    }

    const outcome = def.serial
      ? await this.serially(input.traceId, async () => {
          await this.serialTurn(input.traceId, begin.call.seq);
          return this.execute(tool, input, args);
        })
      : await this.execute(tool, input, args);
    if (outcome.ours) return this.unbegin(input, begin.call.seq, outcome.ours.error, outcome.ours.failure);
    try {
      await store.finishCall(input.traceId, input.callId, {
        output: outcome.output,
        status: outcome.status,
        finishedAt: Date.now(),
        durationMs: outcome.durationMs,
        outputBytes: outcome.outputBytes,
        truncated: outcome.truncated,
        sandbox: outcome.sandbox ?? null,
      });
    } catch (e) {
      throw errors.store((e as Error).message);
    }
    if (outcome.integrity) await this.o.integrity?.record(input.traceId, outcome.integrity.kind, outcome.integrity.detail, input.callId);
    return {
      output: outcome.output,
      status: outcome.status,
      replayed: false,
      seq: begin.call.seq,
      handlerMs: outcome.durationMs,
      ...(outcome.failure ? { failure: outcome.failure } : {}),
    };
  }

  /**
   * The handler failed on our side (a 5xx-coded error: no sandbox slot, the engine or the store
   * down): the call is un-begun (its row removed, its cost given back) and the error answered, so
   * nothing of it is recorded or charged and the trainer's retry with the same call id runs it.
   * Waiters on this call in this process get the same error; replicas polling it, RFT_ERR_CALL_NOT_RUN.
   * If the un-begin itself fails (the store is down), the store's 503 is answered; the row stays
   * running, and the next boot's markInterrupted closes it as for a crash.
   */
  private async unbegin(input: ToolCallInput, seq: number, error: RftError, failure: Failure): Promise<never> {
    try {
      await this.o.store.unbeginCall(input.traceId, input.callId, seq, Date.now());
    } catch (e) {
      this.o.log.error({ err: e, trace_id: input.traceId, call_id: input.callId }, 'could not un-begin a call that failed on a server error');
      throw isRftError(e) ? e : errors.store((e as Error).message);
    }
    this.o.metrics?.failure(failure);
    markFailureCounted(error);
    throw error;
  }

  /**
   * Labels a rollout with its run on its first call. Not in the call's own commit (beginCall stays as
   * it is on the tool path): a failure here is logged and the call goes on, since the label is the
   * dashboard's, never the reward's, and the rollout's grade labels it again in its own commit.
   */
  private async label(traceId: string, run: string): Promise<void> {
    try {
      await this.o.store.labelRollout(traceId, run);
    } catch (e) {
      this.o.log.warn({ err: e, trace_id: traceId, run }, "could not record the rollout's run label");
    }
  }

  /** Once per rollout (on its first call): a row whose tool_budget was ignored for the default. */
  private warnOnBadBudget(input: ToolCallInput): void {
    const problem = toolBudgetProblem(input.item);
    if (problem) this.o.log.warn({ trace_id: input.traceId, default_budget: this.o.defaultBudget }, `${problem}; this rollout uses the default budget`);
  }

  /** Across replicas (a shared store): waits for the rollout's earlier serial calls running elsewhere. */
  private async serialTurn(traceId: string, seq: number): Promise<void> {
    const replicas = this.o.store.replicas;
    if (!replicas || !this.o.serialTools) return;
    // Not AbortSignal.any with the process-long shutdown signal: Node 20 keeps a WeakRef per call in it for good.
    const shutdown = this.o.shutdown;
    const ac = new AbortController();
    const onShutdown = () => ac.abort(shutdown.reason);
    if (shutdown.aborted) onShutdown();
    else shutdown.addEventListener('abort', onShutdown, { once: true });
    const timer = setTimeout(() => ac.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError')), SERIAL_WAIT_MS);
    timer.unref();
    try {
      await replicas.serialTurn(traceId, seq, this.o.serialTools(), ac.signal).catch((e: unknown) => {
        if (shutdown.aborted) throw e;
        this.o.log.warn({ err: e, trace_id: traceId, seq }, 'a serial call no longer waits for the earlier ones of its rollout');
      });
    } finally {
      clearTimeout(timer);
      shutdown.removeEventListener('abort', onShutdown);
    }
  }

  /** Runs fn after every serial call of this rollout that arrived before it (in this process). */
  private async serially<T>(traceId: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.serialTails.get(traceId) ?? Promise.resolve();
    const mine = prev.then(fn, fn);
    const tail = mine.catch(() => undefined);
    this.serialTails.set(traceId, tail);
    try {
      return await mine;
    } finally {
      if (this.serialTails.get(traceId) === tail) this.serialTails.delete(traceId);
    }
  }

  private async execute(
    tool: LoadedTool,
    input: ToolCallInput,
    args: { value: unknown; error?: string },
  ): Promise<Executed> {
    const def = tool.def;
    const started = performance.now();
    const maxBytes = def.maxOutputBytes ?? this.o.defaultMaxOutputBytes;
    if (args.error) {
      return executed(`Error: ${args.error}. Send arguments as a JSON object matching the "${def.name}" schema.`, 'invalid_arguments', started, maxBytes);
    }
    const parsed = def.parameters.safeParse(args.value);
    if (!parsed.success) {
      return executed(`Error: invalid arguments for "${def.name}": ${formatZodIssues(parsed.error.issues)}`, 'invalid_arguments', started, maxBytes);
    }
    const timeoutMs = def.timeoutMs ?? this.o.defaultTimeoutMs;
    const ctx = new CallContext(this, this.o, input, def.name);
    const withSandbox = (e: Executed): Executed => (ctx.sandboxId !== undefined ? { ...e, sandbox: ctx.sandboxId } : e);
    try {
      let result = def.handler(parsed.data, ctx);
      // A handler that returned synchronously cannot have outlived its timeout (the timer could
      // not have fired before it returned), so only a promise is raced against the clock.
      if (isThenable(result)) {
        result = await raceTimeout(result, timeoutMs, ctx);
        if (result === TIMED_OUT) {
          // Gave up still waiting for its sandbox or its server's start (past WAIT_CAP_MS): the tool
          // never ran, the wait was ours.
          if (ctx.timedOutWaiting) {
            const waited = Math.round(performance.now() - started);
            const error = ctx.timedOutWaiting === 'sandbox' ? errors.sandboxQueueTimeout(waited) : errors.toolStartTimeout(`the server of tool "${def.name}"`, waited);
            return { ...executed('', 'timeout', started, maxBytes), ours: { error, failure: failureOfToolError(error) } };
          }
          return withSandbox(executed(`Error: tool "${def.name}" timed out after ${timeoutMs} ms.`, 'timeout', started, maxBytes));
        }
      }
      return withSandbox(executed(typeof result === 'string' ? result : (JSON.stringify(result) ?? 'null'), 'ok', started, maxBytes));
    } catch (e) {
      const msg = e instanceof Error ? e.message : String(e);
      const failure = failureOfToolError(e);
      if (failure.kind === 'infra' && isRftError(e)) {
        ctx.log.warn({ err: e }, 'tool handler failed on a server error; the call is not recorded');
        return { ...executed('', 'tool_error', started, maxBytes), ours: { error: e, failure } };
      }
      ctx.log.info({ err: e }, 'tool handler threw');
      const out: Executed = { ...executed(`Error: ${msg}`, 'tool_error', started, maxBytes), failure };
      const kind = integrityKindOfError(e);
      if (kind) out.integrity = { kind, detail: msg };
      return withSandbox(out);
    } finally {
      ctx.dispose();
    }
  }

  /**
   * A call id seen before: return what was recorded, waiting if it is still running elsewhere. A call
   * a restart cut is not an answer: what it did is unknown, so it is neither shown to the model nor
   * run again (RFT_ERR_CALL_INTERRUPTED, a 5xx: the trainer drops the rollout). An idempotent tool's
   * cut call was un-begun instead (markInterrupted), so its retry runs it.
   */
  private async replay(call: RecordedCall, timeoutMs: number, tool: string): Promise<ToolCallOutcome> {
    const deadline = Date.now() + timeoutMs + 5_000;
    let c: RecordedCall | undefined = call;
    let checked = Date.now();
    while (c && c.status === 'running') {
      if (Date.now() > deadline || this.o.shutdown.aborted) throw errors.store(`call ${call.callId} is still running`);
      await new Promise((r) => setTimeout(r, WAIT_POLL_MS));
      // Running on a replica that is gone: it will never finish there; close it as its restart would.
      const replicas = this.o.store.replicas;
      if (replicas && Date.now() - checked >= ORPHAN_CHECK_MS) {
        checked = Date.now();
        await replicas.interruptOrphan(call.traceId, call.callId, INTERRUPTED_OUTPUT, checked, this.idempotentTools()).catch(() => false);
      }
      c = await this.o.store.getCall(call.traceId, call.callId);
    }
    // Un-begun by the replica that ran it (a failure of ours): not recorded, so a retry runs it.
    if (!c) throw errors.callNotRun(call.callId);
    if (c.status === 'interrupted') {
      const e = errors.callInterrupted(call.callId);
      this.o.metrics?.toolCall(tool, 'interrupted', undefined);
      markFailureCounted(e);
      throw e;
    }
    return { output: c.output ?? '', status: c.status, replayed: true, seq: c.seq };
  }

  private idempotentTools(): readonly string[] {
    return this.o.idempotentTools?.() ?? [];
  }

  /**
   * At boot: the calls a previous process left running are closed, their cost given back: an
   * idempotent tool's are un-begun (their retry runs them), the others' marked interrupted.
   */
  async markInterruptedAtBoot(): Promise<number> {
    return this.o.store.markInterrupted(INTERRUPTED_OUTPUT, Date.now(), this.idempotentTools());
  }
}

/**
 * A handler's outcome: what finishCall records (but the finish time), whose failure a throw was,
 * whether it was the tool refusing an attempt to leave the sandbox, or a failure of ours.
 */
type Executed = Omit<FinishCallInput, 'finishedAt'> & {
  failure?: Failure;
  integrity?: { kind: IntegrityKind; detail: string };
  /** The handler failed on our side: the call is un-begun and this error answered (Ledger.unbegin). */
  ours?: { error: RftError; failure: Failure };
};

function executed(raw: string, status: Exclude<CallStatus, 'running'>, started: number, maxBytes: number): Executed {
  const t = truncateOutput(raw, maxBytes);
  return { output: t.output, status, durationMs: performance.now() - started, outputBytes: t.originalBytes, truncated: t.truncated };
}

const TIMED_OUT = Symbol('timeout');

/**
 * Runs `work` as the server's own: starting what the tool runs on (a bridged MCP server's instance)
 * is ours, like creating its sandbox, so its time is not counted in the tool's timeout, which counts
 * the tool's own run. The work is bounded by its own limit and answers a coded 5xx past it (the
 * ledger un-begins the call: not recorded, not charged). A ctx that is not the ledger's (a test's
 * helper) just awaits it.
 */
export function serverWork<T>(ctx: ToolContext, work: Promise<T>): Promise<T> {
  return ctx instanceof CallContext ? ctx.serverWork(work) : work;
}

function isThenable(v: unknown): v is PromiseLike<unknown> {
  return typeof v === 'object' && v !== null && typeof (v as { then?: unknown }).then === 'function';
}

/**
 * How long a call may wait for its sandbox or its server's start beyond its own timeout before it is
 * given up as ours (503). The admission queue's timeout, the engines' request timeouts and an MCP
 * server's start bound (startTimeoutMs, at most 10 minutes) bound the wait first.
 */
const WAIT_CAP_MS = 10 * 60_000;

/**
 * The handler's promise or TIMED_OUT, whichever settles first; the timeout aborts ctx.signal. The
 * tool's timeout counts the tool's own time: the time it waited for its sandbox (an admission queue,
 * an engine busy creating a burst's containers) or for what it runs on to start (serverWork: an MCP
 * server's instance) is the server's and is not counted, or a slow creation would end in a timeout
 * charged to the model.
 */
function raceTimeout(p: PromiseLike<unknown>, timeoutMs: number, ctx: CallContext): Promise<unknown> {
  let timer: NodeJS.Timeout | undefined;
  const started = performance.now();
  return new Promise<unknown>((resolve, reject) => {
    const check = (): void => {
      const elapsed = performance.now() - started;
      const waited = ctx.waitedMs();
      // (A timer can fire up to a millisecond before performance.now() says its time has passed:
      // libuv's clock is coarser. Re-arming then would let a later timer of the same length fire first.)
      if (ctx.waitingOnServer ? waited < timeoutMs + WAIT_CAP_MS : elapsed - waited < timeoutMs - 2) {
        timer = setTimeout(check, Math.max(1, ctx.waitingOnServer ? timeoutMs : timeoutMs - (elapsed - waited)));
        return;
      }
      ctx.timedOutWaiting = ctx.waitingOn(); // before the abort ends the wait
      ctx.abort(new Error(`timed out after ${timeoutMs} ms`));
      resolve(TIMED_OUT);
    };
    timer = setTimeout(check, timeoutMs);
    p.then(resolve, reject);
  }).finally(() => clearTimeout(timer));
}

/**
 * A tool call's ctx. The logger child, the abort signal and the rollout view are built only when
 * the handler reads them (most calls do not), and the getters live on the prototype, so a call
 * costs one small object.
 */
class CallContext implements ToolContext {
  readonly traceId: string;
  readonly callId: string;
  readonly item: Item;
  readonly stateless: boolean;
  private ac: AbortController | undefined;
  private logger: Logger | undefined;
  private view: RolloutView | undefined;
  private onShutdown: (() => void) | undefined;
  /** Sandbox requests not yet answered (waiting in the admission queue, or being built). */
  private acquiring = 0;
  /** Waits on the server not yet over: sandbox requests, and starts of what the tool runs on (serverWork). */
  private open = 0;
  /** Time spent with at least one wait on the server open: finished spans, and the start of the current one. */
  private waited = 0;
  private waitingSince = 0;
  /** The tool's timeout fired while it still waited on the server: for its sandbox, or for a start. */
  timedOutWaiting: 'sandbox' | 'start' | undefined;
  /** Id of the sandbox ctx.sandbox() gave (the last one, if it was replaced during the call): recorded with the call. */
  sandboxId: string | undefined;

  constructor(
    private readonly ledger: Ledger,
    private readonly o: LedgerOptions,
    input: ToolCallInput,
    private readonly tool: string,
  ) {
    this.traceId = input.traceId;
    this.callId = input.callId;
    this.item = input.item;
    this.stateless = input.stateless === true;
  }

  get rollout(): RolloutView {
    return (this.view ??= this.ledger.rolloutView(this.traceId, this.item, this.callId));
  }

  get log(): Logger {
    return (this.logger ??= this.o.log.child({ trace_id: this.traceId, call_id: this.callId, tool: this.tool }));
  }

  get signal(): AbortSignal {
    if (!this.ac) {
      this.ac = new AbortController();
      const shutdown = this.o.shutdown;
      if (shutdown.aborted) this.ac.abort(shutdown.reason);
      else {
        const ac = this.ac;
        this.onShutdown = () => ac.abort(shutdown.reason);
        shutdown.addEventListener('abort', this.onShutdown, { once: true });
      }
    }
    return this.ac.signal;
  }

  sandbox(): Promise<Sandbox> {
    if (this.stateless) return Promise.reject(errors.noRollout(this.tool));
    const sandboxes = this.o.sandboxes;
    if (!sandboxes) return Promise.reject(errors.sandboxUnavailable('sandboxes are disabled on this server (RFT_SANDBOX=none)'));
    // Getting the rollout's sandbox is the server's work: a failure without a code (a host fs error
    // building the workspace, an engine's socket) is ours, a 5xx, never a tool error charged to the
    // model; coded ones keep their status (a template the row names that does not exist is a 4xx).
    this.acquiring++;
    const acquired = sandboxes
      .acquire(this.traceId, this.item, this.signal)
      .then((sb) => {
        this.sandboxId = sb.id;
        return sb;
      })
      .catch((e: unknown) => {
        if (isRftError(e) || this.signal.aborted) throw e;
        this.log.error({ err: e }, 'could not get the rollout\'s sandbox');
        throw errors.sandboxUnavailable(`could not create this rollout's sandbox (${(e as { code?: unknown }).code ?? 'failed'})`);
      })
      .finally(() => this.acquiring--);
    return this.serverWork(acquired);
  }

  /** Waits for `work` as the server's own: the time it takes is not the tool's (see serverWork). */
  serverWork<T>(work: Promise<T>): Promise<T> {
    if (this.open++ === 0) this.waitingSince = performance.now();
    return work.finally(() => {
      if (--this.open === 0) this.waited += performance.now() - this.waitingSince;
    });
  }

  /** How long this call has waited on the server so far (ms). */
  waitedMs(): number {
    return this.waited + (this.open > 0 ? performance.now() - this.waitingSince : 0);
  }

  /** The handler is still waiting for its sandbox or a start (a timeout now is the server's, not the tool's). */
  get waitingOnServer(): boolean {
    return this.open > 0;
  }

  /** What the handler waits for now, if it waits on the server. */
  waitingOn(): 'sandbox' | 'start' | undefined {
    if (this.open === 0) return undefined;
    return this.acquiring > 0 ? 'sandbox' : 'start';
  }

  abort(reason: Error): void {
    this.ac?.abort(reason);
  }

  dispose(): void {
    if (this.onShutdown) this.o.shutdown.removeEventListener('abort', this.onShutdown);
  }
}
