// `rollout`: plays the trainer against a real server for k tries of every dataset row.
import type { Command } from 'commander';
import { errors } from '../../errors.js';
import type { DatasetRow } from './dataset.js';
import type { ModelApi } from './model.js';
import { pool } from './pool.js';
import { DEFAULT_MAX_REPLY_BYTES } from '../../grading/reply-cap.js';
import { Progress } from './progress.js';
import { ResultsFile, pairKey } from './results.js';
import type { GymSide } from './gym.js';
import { clip } from './retry.js';
import { runRollout, type RolloutDeps, type RolloutResult } from './run.js';
import { withServerOptions, type ServerOptions } from '../server-options.js';
import { parseRunLabel, RUN_HEADER } from '../../protocol/run-label.js';

interface RolloutOptions extends ServerOptions {
  dataset: string;
  model: string;
  baseUrl?: string;
  k: string;
  concurrency: string;
  maxSteps: string;
  out: string;
  graderPath: string;
  api: string;
  maxReplyBytes: string;
  retryDiscarded?: boolean;
  door: string;
  doorUrl?: string;
  gymAgent: string;
  run?: string;
  temperature?: string;
  reasoningEffort?: string;
}

/** --temperature and --reasoning-effort, only when given: a model keeps its defaults otherwise. */
function sampling(opts: RolloutOptions): { temperature?: number; reasoningEffort?: string } {
  const t = opts.temperature === undefined ? undefined : Number(opts.temperature);
  if (t !== undefined && (opts.temperature!.trim() === '' || !Number.isFinite(t) || t < 0 || t > 2)) throw errors.cliUsage(`--temperature must be a number from 0 to 2, got "${opts.temperature}"`);
  return { ...(t !== undefined ? { temperature: t } : {}), ...(opts.reasoningEffort !== undefined ? { reasoningEffort: opts.reasoningEffort } : {}) };
}

const DOORS = ['agent-rft', 'nemo-gym'] as const;

function positiveInt(name: string, v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw errors.cliUsage(`${name} must be a positive integer, got "${v}"`);
  return n;
}

export interface RolloutRunOptions {
  rows: DatasetRow[];
  concurrency: number;
  deps: RolloutDeps;
  results: ResultsFile;
  onDone?: (r: RolloutResult) => void;
  /** Aborted: start no new rollout, finish those in flight. */
  signal?: AbortSignal;
  /** Through the NeMo Gym door instead of the Agent RFT routes. */
  gym?: GymSide;
}

export interface Job {
  row: number;
  tryIndex: number;
}

/** Every (row, try) pair not already in the results file, row by row. */
export function pendingJobs(rows: number, k: number, done: ReadonlySet<string>): Job[] {
  const jobs: Job[] = [];
  for (let row = 0; row < rows; row++) {
    for (let t = 0; t < k; t++) if (!done.has(pairKey(row, t))) jobs.push({ row, tryIndex: t });
  }
  return jobs;
}

/** Runs the jobs, appending each result to the results file as it finishes. */
export async function runAll(o: RolloutRunOptions, jobs: Job[]): Promise<RolloutResult[]> {
  const finished: RolloutResult[] = [];
  await pool(jobs, o.concurrency, async ({ row, tryIndex }) => {
    const r = o.gym ? await o.gym.run(row, tryIndex, o.rows[row]!, o.deps, o.gym) : await runRollout(row, tryIndex, o.rows[row]!, o.deps);
    o.results.append(r);
    finished.push(r);
    o.onDone?.(r);
  }, o.signal);
  return finished;
}

/** --run NAME: the x-rft-run header of every request, so the server labels the rollouts (checked before any). */
function runHeaders(opts: RolloutOptions): Record<string, string> {
  const run = parseRunLabel(opts.run, '--run');
  return run === undefined ? {} : { [RUN_HEADER]: run };
}

const RETRY_HINT = 'the same command with --retry-discarded';

/** How to run discarded rollouts again: a row the grader refused needs the dataset fixed first, not a retry. */
function retryHint(discarded: RolloutResult[], opts: RolloutOptions): string {
  if (!discarded.every((r) => r.error_code === errors.badRow.code)) return RETRY_HINT;
  return `after fixing the rows (\`rft-endpoints dataset check ${opts.dataset}\` names what each lacks), into a new --out: a bad row fails the same way on every retry`;
}

/** The dataset's rows in Gym's shape (a row that has none fails here, with its line) and the door's client. */
async function gymSide(opts: RolloutOptions): Promise<GymSide> {
  const [{ convertDataset }, { GymDoorClient }, { runGymRollout }] = await Promise.all([
    import('../dataset/convert.js'),
    import('./gym-http.js'),
    import('./gym.js'),
  ]);
  return { rows: convertDataset(opts.dataset), agent: opts.gymAgent, door: new GymDoorClient(opts.doorUrl!, { headers: runHeaders(opts) }), run: runGymRollout };
}

async function action(opts: RolloutOptions): Promise<void> {
  const k = positiveInt('-k', opts.k);
  const concurrency = positiveInt('--concurrency', opts.concurrency);
  const maxSteps = positiveInt('--max-steps', opts.maxSteps);
  const maxReplyBytes = positiveInt('--max-reply-bytes', opts.maxReplyBytes);
  if (!['responses', 'chat', 'auto'].includes(opts.api)) throw errors.cliUsage(`--api must be responses, chat or auto, got "${opts.api}"`);
  if (!(DOORS as readonly string[]).includes(opts.door)) throw errors.cliUsage(`--door must be ${DOORS.join(' or ')}, got "${opts.door}"`);
  if (opts.door === 'nemo-gym' && opts.doorUrl === undefined) throw errors.cliUsage('--door nemo-gym needs --door-url, the address of the server\'s NeMo Gym listener (RFT_NEMO_GYM_HOST:RFT_NEMO_GYM_PORT)');
  const [{ readDataset }, { clientFrom }, { ModelClient }, { openModel }] = await Promise.all([
    import('./dataset.js'),
    import('./http.js'),
    import('./model.js'),
    import('../models/model-source.js'),
  ]);
  const rows = readDataset(opts.dataset);
  const gym = opts.door === 'nemo-gym' ? await gymSide(opts) : undefined;
  // Before the first row: a model endpoint is named (never the SDK's default with a placeholder
  // key), and the server answers with this credential, so a wrong setup fails once, not per rollout.
  const endpoint = await openModel(opts.model, rows, opts.baseUrl);
  const server = clientFrom(opts, Math.max(16, concurrency * 4), runHeaders(opts));
  try {
    await server.check();
    await gym?.door.check();
  } catch (e) {
    await Promise.all([server.close(), gym?.door.close(), endpoint.close()]);
    throw e;
  }
  const results = new ResultsFile(opts.out, { retryDiscarded: opts.retryDiscarded === true });
  const jobs = pendingJobs(rows.length, k, results.done);
  const skipped = rows.length * k - jobs.length;
  const model = new ModelClient({ model: opts.model, api: opts.api as ModelApi, maxReplyBytes, baseURL: endpoint.baseURL, ...(endpoint.apiKey ? { apiKey: endpoint.apiKey } : {}), ...sampling(opts) });
  if (skipped > 0 && jobs.length === 0) {
    process.stderr.write(`nothing to run: all ${skipped} rollouts are already in ${opts.out}; to start over, name a new --out (or delete ${opts.out})${opts.retryDiscarded ? '' : ', or add --retry-discarded to run its discarded ones again'}\n`);
  } else if (skipped > 0) {
    process.stderr.write(`resuming: ${skipped} rollouts already in ${opts.out} (to start over instead, name a new --out)\n`);
  }
  const progress = new Progress(jobs.length);
  // First Ctrl-C: finish the rollouts in flight (their lines are kept), start no more. Second: quit now.
  const stop = new AbortController();
  const onSigint = () => {
    if (stop.signal.aborted) process.exit(130);
    stop.abort();
    process.stderr.write('\nstopping: finishing the rollouts in flight (Ctrl-C again to quit now)\n');
  };
  process.on('SIGINT', onSigint);
  try {
    const finished = await runAll(
      { rows, concurrency, deps: { server, model, maxSteps, graderPath: opts.graderPath }, results, onDone: (r) => progress.done(r), signal: stop.signal, ...(gym ? { gym } : {}) },
      jobs,
    );
    const scored = finished.filter((r) => r.score !== null);
    const mean = scored.length > 0 ? scored.reduce((s, r) => s + (r.score ?? 0), 0) / scored.length : NaN;
    const discarded = finished.length - scored.length;
    console.log(
      `${finished.length} rollouts (${skipped} skipped as done), mean score ${Number.isNaN(mean) ? '-' : mean.toFixed(3)}, ` +
        `${discarded} discarded, api ${model.resolvedApi}, door ${opts.door}; results in ${opts.out}`,
    );
    if (stop.signal.aborted) {
      console.log(`interrupted with ${jobs.length - finished.length} rollouts left: run the same command again to resume`);
      process.exitCode = 130;
    } else if (discarded > 0 && scored.length === 0) {
      const first = finished.find((r) => r.discarded);
      throw errors.allDiscarded(discarded, clip(`${first?.error_code ?? ''} ${first?.error ?? ''}`.trim(), 300), retryHint(finished.filter((r) => r.discarded), opts));
    } else if (discarded > 0) {
      console.log(`${discarded} discarded (their error is in ${opts.out}); to run them again: ${retryHint(finished.filter((r) => r.discarded), opts)}`);
    }
  } finally {
    process.off('SIGINT', onSigint);
    await Promise.all([server.close(), gym?.door.close(), endpoint.close()]);
  }
}

export function register(program: Command): void {
  withServerOptions(
    program
      .command('rollout')
      .description('run k rollouts per dataset row against the server, playing the trainer with any OpenAI-compatible model')
      .requiredOption('--dataset <file>', 'Agent RFT dataset (JSONL with messages, tools, other fields)')
      .requiredOption('--model <name>', 'model name; scripted:FILE plays scripted turns per row, replay:EXPORT the model side of exported rollouts (both in this process: no key, no network)')
      .option('--base-url <url>', 'OpenAI-compatible API base URL (env OPENAI_BASE_URL; with neither, OPENAI_API_KEY must be set and the OpenAI API is used)')
      .option('-k <n>', 'rollouts per row', '1')
      .option('--concurrency <c>', 'rollouts in flight', '4')
      .option('--max-steps <s>', 'model turns per rollout', '10')
      .option('--out <file>', 'results JSONL (appended; a rerun resumes)', 'results.jsonl')
      .option('--grader-path <path>', 'grader endpoint path on the server', '/grade')
      .option('--temperature <t>', 'sampling temperature sent to the model (default: the model\'s own)')
      .option('--reasoning-effort <e>', 'reasoning effort sent to the model (Responses reasoning.effort, Chat reasoning_effort), as the job\'s hyperparameters.reasoning_effort')
      .option('--api <api>', 'responses, chat, or auto (Responses, falling back to Chat Completions on 404)', 'auto')
      .option(
        '--max-reply-bytes <n>',
        "largest reply read from the model endpoint; past it the request is aborted and that rollout discarded (RFT_ERR_MODEL_REPLY_TOO_LARGE)",
        String(DEFAULT_MAX_REPLY_BYTES),
      )
      .option('--retry-discarded', 'on resume, run the discarded rollouts of --out again (the new line replaces the old one)')
      .option('--door <door>', "the trainer's protocol: agent-rft (POST /tools, --grader-path) or nemo-gym (the NeMo Gym door, as Gym's simple_agent)", 'agent-rft')
      .option('--door-url <url>', 'with --door nemo-gym: the NeMo Gym listener, e.g. http://127.0.0.1:8788 (RFT_NEMO_GYM_HOST:RFT_NEMO_GYM_PORT)')
      .option('--run <name>', 'label the rollouts with this run (the x-rft-run header): the dashboard and exports filter on it')
      .option('--gym-agent <name>', "with --door nemo-gym: agent_ref.name of rows without one, as ng_collect_rollouts +agent_name sets it", 'rft_agent'),
  ).action(action);
}
