// `rollout`: plays the trainer against a real server for k tries of every dataset row.
import type { Command } from 'commander';
import { errors } from '../errors.js';
import type { DatasetRow } from './rollout-dataset.js';
import type { ModelApi } from './rollout-model.js';
import { pool } from './rollout-pool.js';
import { DEFAULT_MAX_REPLY_BYTES } from './rollout-reply-cap.js';
import { Progress } from './rollout-progress.js';
import { ResultsFile, pairKey } from './rollout-results.js';
import { runRollout, type RolloutDeps, type RolloutResult } from './rollout-run.js';
import { withServerOptions, type ServerOptions } from './server-options.js';

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
}

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
    const r = await runRollout(row, tryIndex, o.rows[row]!, o.deps);
    o.results.append(r);
    finished.push(r);
    o.onDone?.(r);
  }, o.signal);
  return finished;
}

const RETRY_HINT = 'the same command with --retry-discarded';

async function action(opts: RolloutOptions): Promise<void> {
  const k = positiveInt('-k', opts.k);
  const concurrency = positiveInt('--concurrency', opts.concurrency);
  const maxSteps = positiveInt('--max-steps', opts.maxSteps);
  const maxReplyBytes = positiveInt('--max-reply-bytes', opts.maxReplyBytes);
  if (!['responses', 'chat', 'auto'].includes(opts.api)) throw errors.cliUsage(`--api must be responses, chat or auto, got "${opts.api}"`);
  const [{ readDataset }, { clientFrom }, { ModelClient, modelEndpoint }] = await Promise.all([
    import('./rollout-dataset.js'),
    import('./rollout-http.js'),
    import('./rollout-model.js'),
  ]);
  const rows = readDataset(opts.dataset);
  // Before the first row: a model endpoint is named (never the SDK's default with a placeholder
  // key), and the server answers with this credential, so a wrong setup fails once, not per rollout.
  const endpoint = modelEndpoint(opts.baseUrl);
  const server = clientFrom(opts, Math.max(16, concurrency * 4));
  try {
    await server.check();
  } catch (e) {
    await server.close();
    throw e;
  }
  const results = new ResultsFile(opts.out, { retryDiscarded: opts.retryDiscarded === true });
  const jobs = pendingJobs(rows.length, k, results.done);
  const skipped = rows.length * k - jobs.length;
  const model = new ModelClient({ model: opts.model, api: opts.api as ModelApi, maxReplyBytes, ...endpoint });
  if (skipped > 0) process.stderr.write(`resuming: ${skipped} rollouts already in ${opts.out}\n`);
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
      { rows, concurrency, deps: { server, model, maxSteps, graderPath: opts.graderPath }, results, onDone: (r) => progress.done(r), signal: stop.signal },
      jobs,
    );
    const scored = finished.filter((r) => r.score !== null);
    const mean = scored.length > 0 ? scored.reduce((s, r) => s + (r.score ?? 0), 0) / scored.length : NaN;
    const discarded = finished.length - scored.length;
    console.log(
      `${finished.length} rollouts (${skipped} skipped as done), mean score ${Number.isNaN(mean) ? '-' : mean.toFixed(3)}, ` +
        `${discarded} discarded, api ${model.resolvedApi}; results in ${opts.out}`,
    );
    if (stop.signal.aborted) {
      console.log(`interrupted with ${jobs.length - finished.length} rollouts left: run the same command again to resume`);
      process.exitCode = 130;
    } else if (discarded > 0 && scored.length === 0) {
      const first = finished.find((r) => r.discarded);
      throw errors.allDiscarded(discarded, `${first?.error_code ?? ''} ${first?.error ?? ''}`.trim().slice(0, 300), RETRY_HINT);
    } else if (discarded > 0) {
      console.log(`${discarded} discarded (their error is in ${opts.out}); to run them again: ${RETRY_HINT}`);
    }
  } finally {
    process.off('SIGINT', onSigint);
    await server.close();
  }
}

export function register(program: Command): void {
  withServerOptions(
    program
      .command('rollout')
      .description('run k rollouts per dataset row against the server, playing the trainer with any OpenAI-compatible model')
      .requiredOption('--dataset <file>', 'Agent RFT dataset (JSONL with messages, tools, other fields)')
      .requiredOption('--model <name>', 'model name')
      .option('--base-url <url>', 'OpenAI-compatible API base URL (env OPENAI_BASE_URL; with neither, OPENAI_API_KEY must be set and the OpenAI API is used)')
      .option('-k <n>', 'rollouts per row', '1')
      .option('--concurrency <c>', 'rollouts in flight', '4')
      .option('--max-steps <s>', 'model turns per rollout', '10')
      .option('--out <file>', 'results JSONL (appended; a rerun resumes)', 'results.jsonl')
      .option('--grader-path <path>', 'grader endpoint path on the server', '/grade')
      .option('--api <api>', 'responses, chat, or auto (Responses, falling back to Chat Completions on 404)', 'auto')
      .option(
        '--max-reply-bytes <n>',
        "largest reply read from the model endpoint; past it the request is aborted and that rollout discarded (RFT_ERR_MODEL_REPLY_TOO_LARGE)",
        String(DEFAULT_MAX_REPLY_BYTES),
      )
      .option('--retry-discarded', 'on resume, run the discarded rollouts of --out again (the new line replaces the old one)'),
  ).action(action);
}
