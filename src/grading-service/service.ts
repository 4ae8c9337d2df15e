// Runs a grader for a finished rollout. A retried grade for the same (trace_id, grader version,
// sample) returns the recorded score; a failure is recorded and answered 5xx so the trainer drops
// the rollout instead of training on a false zero.
import type { Logger } from 'pino';
import { randomUUID } from 'node:crypto';
import { errors, isRftError, type RftError } from '../errors.js';
import { canonicalJson, sha256 } from '../protocol/canonical.js';
import type { Item, Sample } from '../protocol/wire.js';
import type { GraderContext, GraderResult, RolloutView } from '../registry/define.js';
import type { LoadedGrader } from '../registry/loader.js';
import type { Sandbox } from '../sandbox/types.js';
import type { Store, WriteDurability } from '../store/types.js';
import { budgetFromItem } from '../rollout/budget.js';
import { rolloutView } from '../rollout/view.js';
import type { SandboxProvider } from '../sandbox/provider.js';
import type { GradeRecord } from '../store/records.js';
import type { Metrics } from '../metrics/metrics.js';
import { needsTools, type IntegrityFlags } from '../integrity/flags.js';

export interface GradingOptions {
  store: Store;
  sandboxes: SandboxProvider | undefined;
  defaultBudget: number;
  timeoutMs: number;
  templatesRoot: string;
  log: Logger;
  shutdown: AbortSignal;
  metrics?: Metrics | undefined;
  /** Where a rollout that scored without the tools its task needs is flagged. */
  integrity?: IntegrityFlags | undefined;
}

export interface GradeInput {
  sample: Sample;
  item: Item;
  traceId: string | undefined;
  credential: string | null;
  /** 'endpoint' for the trainer's call; 'regrade', 'check', 'run' for the others. */
  source: string;
  /** Re-run even if this exact grade is recorded (regrade). */
  force?: boolean;
  /** The run label the grade came with (x-rft-run): the rollout's, if it has none yet. */
  run?: string | undefined;
  /** The door of the rollout, if this grade creates it (Agent RFT's when absent). */
  door?: string | undefined;
  /**
   * When the grade's record is answered (WriteDurability; default durable). 'committed' only for a grade that
   * makes a rollout of its own, whose trace id no one knows before the reply (the reward door's): no promise
   * depends on its record, no retry is answered from it, and nothing of that rollout is recorded before it
   * (its grader's ctx.rollout reads no store: no calls, nothing spent).
   */
  durability?: WriteDurability | undefined;
}

export interface GradeOutcome {
  record: GradeRecord;
  replayed: boolean;
}

const EXPLANATION_MAX = 2000;

/** Checks what a grader returned: finite, inside its range, subscores finite. Throws a coded error. */
export function normalizeGraderResult(g: LoadedGrader, raw: unknown): GraderResult {
  const r: Partial<GraderResult> =
    typeof raw === 'number' ? { score: raw } : raw && typeof raw === 'object' ? (raw as Partial<GraderResult>) : {};
  const name = g.def.name;
  if (typeof r.score !== 'number') throw errors.graderBadScore(name, `expected a number or { score }, got ${JSON.stringify(raw)?.slice(0, 100)}`);
  if (!Number.isFinite(r.score)) throw errors.graderBadScore(name, `score is ${r.score}`);
  const [lo, hi] = g.range;
  if (r.score < lo || r.score > hi) throw errors.graderBadScore(name, `score ${r.score} is outside the declared range [${lo}, ${hi}]`);
  const out: GraderResult = { score: r.score };
  if (r.subscores !== undefined) {
    if (!r.subscores || typeof r.subscores !== 'object') throw errors.graderBadScore(name, 'subscores must be an object of numbers');
    for (const [k, v] of Object.entries(r.subscores)) {
      if (typeof v !== 'number' || !Number.isFinite(v)) throw errors.graderBadScore(name, `subscore "${k}" is ${String(v)}`);
    }
    out.subscores = r.subscores;
  }
  if (r.explanation !== undefined) out.explanation = String(r.explanation).slice(0, EXPLANATION_MAX);
  return out;
}

export class GradingService {
  /** Grades running in this process, by (trace_id, grader, version, sample): a duplicate joins, it does not run again. */
  private readonly inflight = new Map<string, Promise<GradeOutcome>>();

  constructor(private readonly o: GradingOptions) {}

  /**
   * Grades a sample once: a retry of a recorded grade returns the record, and identical grades
   * arriving together (the trainer's retry of a slow grade, a proxy's duplicate) run the grader
   * once and all get its result, its failure included. A forced re-grade always runs, and so does a
   * 'committed' one (no retry of it is answered from the record: nothing is looked up, not even a read
   * that would wait for other writes' fsync).
   */
  async grade(g: LoadedGrader, input: GradeInput): Promise<GradeOutcome> {
    const traceId = input.traceId ?? `grade_${randomUUID()}`;
    const sampleHash = sha256(canonicalJson(input.sample));
    if (input.force || input.traceId === undefined || input.durability === 'committed') return this.gradeOnce(g, input, traceId, sampleHash);
    const key = `${traceId}\0${g.def.name}\0${g.version}\0${sampleHash}`;
    const running = this.inflight.get(key);
    if (running) return { record: (await running).record, replayed: true };
    const p = this.gradeOnce(g, input, traceId, sampleHash);
    this.inflight.set(key, p);
    try {
      return await p;
    } finally {
      this.inflight.delete(key);
    }
  }

  private async gradeOnce(g: LoadedGrader, input: GradeInput, traceId: string, sampleHash: string): Promise<GradeOutcome> {
    const { store } = this.o;
    if (!input.force && input.durability !== 'committed') {
      const prior = await store.findGrade(traceId, g.def.name, g.version, sampleHash).catch((e: Error) => {
        throw errors.store(e.message);
      });
      if (prior) {
        this.o.metrics?.grade(g.def.name, 'replayed');
        return { record: prior, replayed: true };
      }
    }
    const rollout = {
      item: input.item, budgetLimit: budgetFromItem(input.item, this.o.defaultBudget), now: Date.now(), run: input.run, door: input.door, durability: input.durability,
    };

    const started = performance.now();
    // The grader's signal: its timeout, or the server's shutdown. A listener removed when the grade
    // ends, not AbortSignal.any with the process-long shutdown signal: Node 20 keeps a WeakRef per
    // AbortSignal.any in the source signal for good, about 60 bytes of heap per grade, unbounded.
    const ac = new AbortController();
    const signal = ac.signal;
    const shutdown = this.o.shutdown;
    const onShutdown = () => ac.abort(shutdown.reason);
    if (shutdown.aborted) onShutdown();
    else shutdown.addEventListener('abort', onShutdown, { once: true });
    const owned: Sandbox[] = [];
    const log = this.o.log.child({ trace_id: traceId, grader: g.def.name });
    const noSandboxes = () => errors.sandboxUnavailable('sandboxes are disabled on this server (RFT_SANDBOX=none)');
    const ctx: GraderContext = {
      traceId,
      rollout: input.durability === 'committed' ? newRolloutView(traceId, input.item, this.o.defaultBudget) : rolloutView(this.o.store, this.o.defaultBudget, traceId, input.item),
      log,
      signal,
      templatesRoot: this.o.templatesRoot,
      sandbox: () => (this.o.sandboxes ? this.o.sandboxes.acquire(traceId, input.item, signal) : Promise.reject(noSandboxes())),
      freshSandbox: async (opts = {}) => {
        if (!this.o.sandboxes) throw noSandboxes();
        const sb = await this.o.sandboxes.createEphemeral({ traceId, ...opts }, signal);
        owned.push(sb);
        return sb;
      },
    };

    let result: GraderResult | undefined;
    let failure: RftError | undefined;
    let timer: NodeJS.Timeout | undefined;
    try {
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          ac.abort(new Error('grader timed out'));
          reject(errors.graderFailed(g.def.name, `timed out after ${this.o.timeoutMs} ms`));
        }, this.o.timeoutMs);
      });
      const badRow = rowProblems(g, input.item);
      if (badRow !== undefined) throw errors.badRow(g.def.name, badRow);
      const raw = await Promise.race([
        Promise.resolve().then(() => g.def.handler({ sample: input.sample, item: input.item, traceId }, ctx)),
        timeout,
      ]);
      result = normalizeGraderResult(g, raw);
    } catch (e) {
      // Always a 5xx to the trainer: a grader that cannot score must make it drop the rollout.
      failure =
        isRftError(e) && e.statusCode >= 500
          ? e
          : errors.graderFailed(g.def.name, withoutHostPaths(isRftError(e) ? `${e.code}: ${e.message}` : e instanceof Error ? e.message : String(e)));
      log.warn({ err: e }, 'grader failed');
    } finally {
      clearTimeout(timer);
      shutdown.removeEventListener('abort', onShutdown);
      await Promise.allSettled(owned.map((s) => s.destroy()));
    }

    // The trainer graded a rollout, so it is over: a score earned without the tools its task needs
    // is flagged in the grade's commit, if the rollout has no recorded tool call (no_tool_score).
    const endpoint = input.source === 'endpoint';
    const flag =
      endpoint && this.o.integrity && result && result.score > g.range[0] && needsTools(input.item)
        ? { traceId, kind: 'no_tool_score' as const, callId: null, detail: `${g.def.name} scored ${result.score} on a rollout with no tool call`, at: Date.now() }
        : undefined;
    const { record, tally } = await store
      .insertGrade({
        traceId,
        grader: g.def.name,
        graderVersion: g.version,
        sampleHash,
        sample: input.sample,
        status: failure ? 'error' : 'ok',
        score: result ? result.score : null,
        subscores: result?.subscores ?? null,
        explanation: result?.explanation ?? null,
        error: failure ? `${failure.code}: ${failure.message}` : null,
        credential: input.credential,
        source: input.source,
        createdAt: Date.now(),
        durationMs: performance.now() - started,
      }, { ...rollout, flagIfNoCalls: flag })
      .catch((e: Error) => {
        throw errors.store(e.message);
      });
    if (failure) {
      const badRow = failure.code === errors.badRow.code;
      this.o.metrics?.grade(g.def.name, badRow ? 'bad_row' : 'error');
      if (badRow && endpoint) await this.o.integrity?.record(traceId, 'bad_row', failure.message);
      throw failure;
    }
    this.o.metrics?.grade(g.def.name, 'ok', record.score ?? undefined);
    if (endpoint) {
      this.o.sandboxes?.graded(traceId);
      if (tally) this.o.metrics?.gradedRollout(g.def.name, tally.calls, tally.budgetExceeded);
      if (flag && tally?.calls === 0) this.o.integrity?.recorded(traceId, flag.kind);
    }
    return { record, replayed: false };
  }
}

/**
 * The view of a rollout this grade makes (a 'committed' grade's): nothing is recorded of it yet, so it has no
 * call and has spent nothing. Answered without the store: a read there would wait for other writes' fsync.
 */
function newRolloutView(traceId: string, item: Item, defaultBudget: number): RolloutView {
  return { traceId, item, calls: () => Promise.resolve([]), budget: () => Promise.resolve({ used: 0, limit: budgetFromItem(item, defaultBudget), exceeded: false }) };
}

/** What is wrong with the row for this grader's itemSchema ("answer: expected string, received undefined"), if anything. */
export function rowProblems(g: LoadedGrader, item: Item): string | undefined {
  const parsed = g.def.itemSchema?.safeParse(item);
  if (!parsed || parsed.success) return undefined;
  return parsed.error.issues
    .slice(0, 3)
    .map((i) => `${i.path.map(String).join('.') || '(row)'}: ${i.message}`)
    .join('; ');
}

/**
 * A failure's text as a caller may see it: absolute paths (a thrown fs error names the host's)
 * become "<path>". The full error is in the server's log.
 */
export function withoutHostPaths(text: string): string {
  return text.replace(/(?<![\w.])\/(?:[^\s'"`:,;()]+\/)+[^\s'"`:,;()]*/g, '<path>');
}
