// The server's Prometheus metrics (prom-client), in a registry of its own (several apps in one
// process, as in the tests, never share series). The series recorded on every call and request are
// hot.ts's (an observation is a Map lookup and an add); the rest are prom-client's own.
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { HotCounter, HotHistogram } from './hot.js';
import { OUTCOME_FAILURE, TOOL_OUTCOMES, type Failure, type ToolOutcome } from './outcomes.js';

/** Seconds: from a fast in-memory tool (sub-millisecond) to the trainer's 10-minute ceiling. */
const DURATION_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600];
const SANDBOX_CREATE_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
const QUEUE_WAIT_BUCKETS = [0, 0.01, 0.05, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];
const TOOL_CALL_COUNT_BUCKETS = [0, 1, 2, 3, 4, 5, 6, 8, 10, 12, 15, 20, 25, 30, 40, 50, 75, 100];

/** Ten equal steps over each grader's declared range (most are [0, 1]: 0, 0.1, ..., 1). */
export function scoreBuckets(ranges: readonly (readonly [number, number])[]): number[] {
  const edges = new Set<number>();
  for (const [lo, hi] of ranges.length ? ranges : [[0, 1] as const]) {
    for (let i = 0; i <= 10; i++) edges.add(Number((lo + ((hi - lo) * i) / 10).toPrecision(12)));
  }
  return [...edges].sort((a, b) => a - b);
}

export interface MetricsOptions {
  /** Declared score ranges of the loaded graders (for rft_grade_score's buckets). */
  graderRanges?: readonly (readonly [number, number])[];
  /** Node's process metrics (CPU, memory, event loop lag, handles). */
  processMetrics?: boolean;
}

/** What rft_sandboxes and the warm pool's series read at scrape time (the manager's stats()). */
export interface SandboxGauges {
  live: number;
  queued: number;
  pool?: { warm: number; target: number; predicted: number; hits: number; misses: number } | null;
}

/** `bad_row`: the row did not match the grader's itemSchema, so it was not graded. */
export type GradeOutcome = 'ok' | 'error' | 'bad_row' | 'replayed';

export class Metrics {
  readonly registry = new Registry();
  private readonly toolCalls: HotCounter;
  private readonly toolDuration: HotHistogram;
  private readonly httpDuration: HotHistogram;
  private readonly grades: Counter<'grader' | 'outcome'>;
  private readonly gradeScore: Histogram<'grader'>;
  private readonly rolloutToolCalls: Histogram<'grader'>;
  private readonly budgetExhausted: Counter<'grader'>;
  private readonly failures: HotCounter;
  private readonly sandboxCreate: Histogram<'driver'>;
  private readonly sandboxQueueWait: Histogram<'outcome'>;
  private readonly integrity: Counter<'kind'>;
  private sandboxStats: (() => SandboxGauges) | undefined;

  constructor(opts: MetricsOptions = {}) {
    const registers = [this.registry];
    const counter = <L extends string>(name: string, help: string, labelNames: L[]) => new Counter({ name, help, labelNames, registers });
    const histogram = <L extends string>(name: string, help: string, labelNames: L[], buckets: number[]) =>
      new Histogram({ name, help, labelNames, buckets, registers });
    const reg = this.registry;
    this.toolCalls = new HotCounter(
      'rft_tool_calls_total',
      'Tool calls answered, by tool and outcome (ok, tool_error, invalid_arguments, timeout, budget_exhausted, interrupted, replayed)',
      ['tool', 'outcome'],
      reg,
    );
    this.toolDuration = new HotHistogram('rft_tool_call_duration_seconds', "Tool handler time (the tool's own work, without the record's writes)", ['tool'], DURATION_BUCKETS, reg);
    this.httpDuration = new HotHistogram('rft_http_request_duration_seconds', 'HTTP request time, by route template and status', ['route', 'status'], DURATION_BUCKETS, reg);
    this.grades = counter('rft_grades_total', 'Grades answered, by grader and outcome (ok, error, bad_row, replayed)', ['grader', 'outcome']);
    this.gradeScore = histogram(
      'rft_grade_score',
      "Scores given, by grader (buckets: ten steps over each grader's range)",
      ['grader'],
      scoreBuckets(opts.graderRanges ?? []),
    );
    this.rolloutToolCalls = histogram(
      'rft_rollout_tool_calls',
      'Tool calls per graded rollout (the trainer graded it: the rollout is over)',
      ['grader'],
      TOOL_CALL_COUNT_BUCKETS,
    );
    this.budgetExhausted = counter('rft_budget_exhausted_rollouts_total', 'Graded rollouts that had a call refused for lack of budget', ['grader']);
    this.failures = new HotCounter(
      'rft_failures_total',
      "Failures by whose they are: kind=model (the model's mistake, shown to it), infra (ours: retried, then the rollout is dropped) or data (a row the grader cannot read)",
      ['kind', 'where'],
      reg,
    );
    this.sandboxCreate = histogram('rft_sandbox_create_duration_seconds', 'Time to create a sandbox (after its admission), by driver', ['driver'], SANDBOX_CREATE_BUCKETS);
    this.sandboxQueueWait = histogram(
      'rft_sandbox_queue_wait_seconds',
      'Time a sandbox creation waited for a free slot (0 when one was free), by how the wait ended',
      ['outcome'],
      QUEUE_WAIT_BUCKETS,
    );
    this.integrity = counter(
      'rft_integrity_flags_total',
      'Integrity events: a rollout tried to leave its sandbox or scored without the tools its task needs (README: "Watch a run")',
      ['kind'],
    );
    const stats = () => this.sandboxStats?.();
    new Gauge({
      name: 'rft_sandboxes',
      help: 'Sandboxes of this replica: live (holding a slot) and queued (waiting for one)',
      labelNames: ['state'],
      registers,
      collect() {
        const s = stats();
        this.set({ state: 'live' }, s?.live ?? 0);
        this.set({ state: 'queued' }, s?.queued ?? 0);
      },
    });
    new Gauge({
      name: 'rft_sandbox_pool',
      help: "The driver's warm pool of prepared sandboxes: warm (ready now) and target (what it fills to; beyond the floor, the step it learned)",
      labelNames: ['state'],
      registers,
      collect() {
        const p = stats()?.pool;
        this.set({ state: 'warm' }, p?.warm ?? 0);
        this.set({ state: 'target' }, p?.target ?? 0);
      },
    });
    new Gauge({
      name: 'rft_sandbox_pool_predicted_step',
      help: 'New rollouts the warm pool expects at the next training step (the largest recent burst)',
      registers,
      collect() {
        this.set(stats()?.pool?.predicted ?? 0);
      },
    });
    new Counter({
      name: 'rft_sandbox_pool_takes_total',
      help: 'New sandboxes by whether the warm pool had one ready (hit) or it was prepared on demand (miss)',
      labelNames: ['outcome'],
      registers,
      collect() {
        const p = stats()?.pool;
        this.reset();
        this.inc({ outcome: 'hit' }, p?.hits ?? 0);
        this.inc({ outcome: 'miss' }, p?.misses ?? 0);
      },
    });
    if (opts.processMetrics !== false) collectDefaultMetrics({ register: this.registry });
  }

  /** Zero series for every tool, grader and outcome: rate() and alerts see them from the first scrape. */
  declare(tools: readonly string[], graders: readonly string[]): void {
    for (const tool of tools) for (const outcome of TOOL_OUTCOMES) this.toolCalls.labels(tool, outcome).inc(0);
    for (const grader of graders) {
      for (const outcome of ['ok', 'error', 'bad_row', 'replayed'] as const) this.grades.labels(grader, outcome).inc(0);
      this.budgetExhausted.labels(grader).inc(0);
    }
    for (const f of new Set(Object.values(OUTCOME_FAILURE).filter((f) => f !== null))) this.failures.labels(f.kind, f.where).inc(0);
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  text(): Promise<string> {
    return this.registry.metrics();
  }

  /** A tool call's reply. `seconds`: the handler's time, for calls that ran it. */
  toolCall(tool: string, outcome: ToolOutcome, seconds: number | undefined, failure: Failure | null = OUTCOME_FAILURE[outcome]): void {
    this.toolCalls.labels(tool, outcome).inc();
    if (seconds !== undefined) this.toolDuration.labels(tool).observe(seconds);
    if (failure) this.failure(failure);
  }

  failure(f: Failure): void {
    this.failures.labels(f.kind, f.where).inc();
  }

  http(route: string, status: number, seconds: number): void {
    this.httpDuration.labels(route, String(status)).observe(seconds);
  }

  grade(grader: string, outcome: GradeOutcome, score?: number): void {
    this.grades.labels(grader, outcome).inc();
    if (score !== undefined) this.gradeScore.labels(grader).observe(score);
  }

  /** A rollout was graded (a new grade, not a replay): its tool calls and whether its budget ran out. */
  gradedRollout(grader: string, toolCalls: number, budgetExhausted: boolean): void {
    this.rolloutToolCalls.labels(grader).observe(toolCalls);
    if (budgetExhausted) this.budgetExhausted.labels(grader).inc();
  }

  /** This process's failures so far, as counted (for the dashboard's view of this replica). */
  async failureTotals(): Promise<{ kind: string; where: string; count: number }[]> {
    const { values } = await this.failures.get();
    return values.filter((v) => v.value > 0).map((v) => ({ kind: String(v.labels.kind), where: String(v.labels.where), count: v.value }));
  }

  integrityFlag(kind: string): void {
    this.integrity.labels(kind).inc();
  }

  sandboxCreated(driver: string, seconds: number): void {
    this.sandboxCreate.labels(driver).observe(seconds);
  }

  sandboxQueued(outcome: string, seconds: number): void {
    this.sandboxQueueWait.labels(outcome).observe(seconds);
  }

  /** Where rft_sandboxes reads its gauges at scrape time. */
  watchSandboxes(stats: () => SandboxGauges): void {
    this.sandboxStats = stats;
  }
}
