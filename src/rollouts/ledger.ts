// The ledger runs each tool call exactly once per (trace_id, call_id): the store's begin
// transaction decides (run / replay / refuse / conflict) and charges the budget atomically; this
// module adds what a transaction cannot: waiting for a duplicate that is still running, and
// per-rollout ordering of serial tools.
import type { Logger } from 'pino';
import { errors, isRftError } from '../errors.js';
import { canonicalJson, sha256 } from '../protocol/canonical.js';
import type { Item } from '../protocol/wire.js';
import type { LoadedTool } from '../registry/loader.js';
import type { RolloutView, ToolContext } from '../registry/define.js';
import type { Store } from '../store/types.js';
import type { CallStatus, RecordedCall } from './types.js';
import type { SandboxProvider } from './sandbox-provider.js';
import { formatZodIssues, truncateOutput } from './output.js';

export interface LedgerOptions {
  store: Store;
  sandboxes: SandboxProvider | undefined;
  defaultBudget: number;
  defaultTimeoutMs: number;
  defaultMaxOutputBytes: number;
  log: Logger;
  /** Aborted at shutdown: running handlers see it through ctx.signal. */
  shutdown: AbortSignal;
}

export interface ToolCallInput {
  traceId: string;
  callId: string;
  /** The raw `arguments` field: a JSON string or an object. */
  arguments: unknown;
  item: Item;
  credential: string | null;
}

export interface ToolCallOutcome {
  output: string;
  status: CallStatus;
  /** true when this reply is a recorded result, not a new run. */
  replayed: boolean;
  seq: number;
}

const WAIT_POLL_MS = 25;

export function budgetFromItem(item: Item, fallback: number): number {
  const b = item.tool_budget;
  return typeof b === 'number' && Number.isInteger(b) && b >= 0 ? b : fallback;
}

export const INTERRUPTED_OUTPUT =
  'Error: this tool call was interrupted by a server restart and was not completed. It will not be run again; ' +
  'call the tool again with a new call id if you still need it.';

export class Ledger {
  private readonly inflight = new Map<string, Promise<ToolCallOutcome>>();
  private readonly serialTails = new Map<string, Promise<unknown>>();

  constructor(private readonly o: LedgerOptions) {}

  rolloutView(traceId: string, item: Item, excludeCallId?: string): RolloutView {
    const { store, defaultBudget } = this.o;
    return {
      traceId,
      item,
      calls: async () => (await store.listCalls(traceId)).filter((c) => c.callId !== excludeCallId),
      budget: () => store.getBudget(traceId, budgetFromItem(item, defaultBudget)),
    };
  }

  async call(tool: LoadedTool, input: ToolCallInput): Promise<ToolCallOutcome> {
    const key = `${input.traceId}\0${input.callId}`;
    const running = this.inflight.get(key);
    if (running) {
      // Same process, same call, still running: wait for it, but still check it is the same call.
      const outcome = await running;
      await this.assertSameCall(tool, input);
      return { ...outcome, replayed: true };
    }
    const p = this.callOnce(tool, input);
    this.inflight.set(key, p);
    try {
      return await p;
    } finally {
      this.inflight.delete(key);
    }
  }

  private parseArguments(raw: unknown): { canonical: string; value: unknown; error?: string } {
    if (raw === undefined || raw === null || raw === '') return { canonical: '{}', value: {} };
    if (typeof raw !== 'string') return { canonical: canonicalJson(raw), value: raw };
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
        durable: def.readOnly !== true,
        overBudgetOutput: `Tool budget exhausted: this rollout may use ${limit} tool-call unit(s) and has no budget left for "${def.name}" (cost ${cost}). The tool was not run. Give your final answer with what you have.`,
      });
    } catch (e) {
      throw isRftError(e) ? e : errors.store((e as Error).message);
    }

    switch (begin.kind) {
      case 'conflict':
        throw errors.callConflict(input.callId);
      case 'existing':
        return this.replay(begin.call, def.timeoutMs ?? this.o.defaultTimeoutMs);
      case 'over_budget':
        return { output: begin.call.output ?? '', status: 'budget_exceeded', replayed: false, seq: begin.call.seq };
      case 'started':
        break;
    }

    const run = () => this.execute(tool, input, args);
    const outcome = def.serial ? await this.serially(input.traceId, run) : await run();
    try {
      await store.finishCall(input.traceId, input.callId, {
        output: outcome.output,
        status: outcome.status,
        finishedAt: Date.now(),
        durationMs: outcome.durationMs,
        outputBytes: outcome.outputBytes,
        truncated: outcome.truncated,
      });
    } catch (e) {
      throw errors.store((e as Error).message);
    }
    return { output: outcome.output, status: outcome.status, replayed: false, seq: begin.call.seq };
  }

  /** Runs fn after every serial call of this rollout that arrived before it. */
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
  ): Promise<{ output: string; status: Exclude<CallStatus, 'running'>; durationMs: number; outputBytes: number; truncated: boolean }> {
    const def = tool.def;
    const started = performance.now();
    const maxBytes = def.maxOutputBytes ?? this.o.defaultMaxOutputBytes;
    const done = (raw: string, status: Exclude<CallStatus, 'running'>) => {
      const t = truncateOutput(raw, maxBytes);
      return { output: t.output, status, durationMs: performance.now() - started, outputBytes: t.originalBytes, truncated: t.truncated };
    };

    if (args.error) return done(`Error: ${args.error}. Send arguments as a JSON object matching the "${def.name}" schema.`, 'invalid_arguments');
    const parsed = def.parameters.safeParse(args.value);
    if (!parsed.success) return done(`Error: invalid arguments for "${def.name}": ${formatZodIssues(parsed.error.issues)}`, 'invalid_arguments');

    const timeoutMs = def.timeoutMs ?? this.o.defaultTimeoutMs;
    // The logger child and the abort signal are built only if the handler uses them: most calls do not.
    let ac: AbortController | undefined;
    let log: Logger | undefined;
    let rollout: RolloutView | undefined;
    // eslint-disable-next-line @typescript-eslint/no-this-alias -- read by the context's lazy getters
    const ledger = this;
    const rootLog = this.o.log;
    const shutdown = this.o.shutdown;
    const onShutdown = () => ac?.abort(shutdown.reason);
    const sandboxes = this.o.sandboxes;
    const ctx: ToolContext = {
      traceId: input.traceId,
      callId: input.callId,
      item: input.item,
      get rollout() {
        return (rollout ??= ledger.rolloutView(input.traceId, input.item, input.callId));
      },
      get log() {
        return (log ??= rootLog.child({ trace_id: input.traceId, call_id: input.callId, tool: def.name }));
      },
      get signal() {
        if (!ac) {
          ac = new AbortController();
          if (shutdown.aborted) ac.abort(shutdown.reason);
          else shutdown.addEventListener('abort', onShutdown, { once: true });
        }
        return ac.signal;
      },
      sandbox() {
        if (!sandboxes) return Promise.reject(errors.sandboxUnavailable('sandboxes are disabled on this server (RFT_SANDBOX=none)'));
        return sandboxes.acquire(input.traceId, input.item, ctx.signal);
      },
    };

    // One promise for "the handler settles or the timeout fires", whichever is first.
    let timer: NodeJS.Timeout | undefined;
    const TIMED_OUT = Symbol('timeout');
    try {
      const result = await new Promise<unknown>((resolve, reject) => {
        timer = setTimeout(() => {
          ac?.abort(new Error(`timed out after ${timeoutMs} ms`));
          resolve(TIMED_OUT);
        }, timeoutMs);
        try {
          Promise.resolve(def.handler(parsed.data, ctx)).then(resolve, reject);
        } catch (e) {
          reject(e as Error);
        }
      });
      if (result === TIMED_OUT) return done(`Error: tool "${def.name}" timed out after ${timeoutMs} ms.`, 'timeout');
      return done(typeof result === 'string' ? result : (JSON.stringify(result) ?? 'null'), 'ok');
    } catch (e) {
      const msg = e instanceof Error ? e.message : String(e);
      ctx.log.info({ err: e }, 'tool handler threw');
      return done(`Error: ${msg}`, 'tool_error');
    } finally {
      clearTimeout(timer);
      if (ac) shutdown.removeEventListener('abort', onShutdown);
    }
  }

  /** A call id seen before: return what was recorded, waiting if it is still running elsewhere. */
  private async replay(call: RecordedCall, timeoutMs: number): Promise<ToolCallOutcome> {
    const deadline = Date.now() + timeoutMs + 5_000;
    let c: RecordedCall | undefined = call;
    while (c && c.status === 'running') {
      if (Date.now() > deadline || this.o.shutdown.aborted) throw errors.store(`call ${call.callId} is still running`);
      await new Promise((r) => setTimeout(r, WAIT_POLL_MS));
      c = await this.o.store.getCall(call.traceId, call.callId);
    }
    if (!c) throw errors.store(`call ${call.callId} disappeared`);
    return { output: c.output ?? '', status: c.status, replayed: true, seq: c.seq };
  }

  async markInterruptedAtBoot(): Promise<number> {
    return this.o.store.markInterrupted(INTERRUPTED_OUTPUT, Date.now());
  }
}
