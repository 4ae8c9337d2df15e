// `rft-endpoints harbor check DIR`: every task of a Harbor dataset checked before training on it, as
// Harbor's oracle and nop agents do (../shared/docs/harbor-tasks.md section 4): the task's image is
// built (once per environment digest, as the server builds it), `solution/solve.sh` runs in a fresh
// container and the task's tests must score 1; a container nobody touched must score at most 0.05
// (tests that pay for doing nothing teach nothing). Both episodes go through the server's own sandbox
// and verify step (Docker, RFT_SANDBOX=docker), tasks in parallel, a line per result as it comes.
// Invalid tasks are named with their code and reason. Exit 0 when every task is valid and passes.
import { randomUUID } from 'node:crypto';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import pino from 'pino';
import { loadConfig } from '../config.js';
import { errors, isRftError } from '../errors.js';
import { readHarborDataset } from '../harbor/dataset.js';
import { HarborTasks } from '../harbor/registry.js';
import { allowedHostVars, harborSandboxImage, resolveTemplates } from '../harbor/sandbox-spec.js';
import type { HarborTask, HarborVerdict } from '../harbor/types.js';
import { verifyHarborTask } from '../harbor/verify.js';
import { createSandboxProvider, type SandboxProvider } from '../sandbox/provider.js';
import type { SandboxImage } from '../sandbox/types.js';

/** The most a no-op episode may score (the bar: doing nothing must not pay). */
export const NOOP_MAX = 0.05;
/** The oracle's time when the task sets no `[agent] timeout_sec`. */
const ORACLE_DEFAULT_SEC = 600;

export interface EpisodeResult {
  score: number | null;
  /** The verdict's reason (a Harbor failure kind), or what failed on our side. */
  detail: string;
}

export interface TaskCheck {
  task: string;
  oracle: EpisodeResult;
  noop: EpisodeResult;
  ok: boolean;
}

export interface CheckReport {
  dir: string;
  tasks: TaskCheck[];
  invalid: { dir: string; code: string; reason: string }[];
  ok: boolean;
}

function describe(v: HarborVerdict): EpisodeResult {
  return v.kind === 'scored' ? { score: v.score, detail: v.file } : { score: 0, detail: v.reason };
}

/** One episode in a fresh container of the task's image: `before` plays the agent (nothing, or the oracle). */
async function episode(provider: SandboxProvider, task: HarborTask, image: SandboxImage, before: 'noop' | 'oracle', signal: AbortSignal): Promise<EpisodeResult> {
  const traceId = `harbor_check_${randomUUID()}`;
  const sandbox = await provider.createEphemeral({ traceId, image }, signal);
  try {
    if (before === 'oracle') {
      const admin = sandbox.admin;
      if (!admin) throw errors.sandboxFailed('the sandbox runs no task image (RFT_SANDBOX=docker)');
      const solution = join(task.dir, 'solution');
      if (!existsSync(join(solution, 'solve.sh'))) return { score: null, detail: 'no solution/solve.sh' };
      const user = task.config.agent.user !== undefined ? String(task.config.agent.user) : undefined;
      await admin.exec(['mkdir', '-p', '/solution', '/logs/agent'], { cwd: '/', timeoutMs: 30_000 });
      const refused = await admin.upload(solution, '/solution', await admin.ids(user));
      if (refused) return { score: null, detail: `solution/ could not be copied in: ${refused}` };
      // Harbor's OracleAgent: bash, the agent's user and workdir, [solution] env, bounded by the agent's time; its exit code is not the result.
      const r = await admin.exec(['bash', '-c', 'bash /solution/solve.sh > /logs/agent/oracle.txt 2>&1'], {
        user,
        cwd: admin.workdir,
        env: { ...resolveTemplates(task.config.solution.env, allowedHostVars()), DEBIAN_FRONTEND: 'noninteractive' },
        timeoutMs: (task.config.agent.timeoutSec ?? ORACLE_DEFAULT_SEC) * 1000,
        signal,
      });
      const v = describe(await verify());
      return r.timedOut ? { ...v, detail: `solve.sh ran past the agent's time; ${v.detail}` } : v;
    }
    return describe(await verify());
  } finally {
    await sandbox.destroy().catch(() => {});
  }

  function verify(): Promise<HarborVerdict> {
    return verifyHarborTask(sandbox, task, { signal, freshSandbox: (img) => provider.createEphemeral({ traceId, image: img }, signal) });
  }
}

async function checkTask(provider: SandboxProvider, task: HarborTask, network: string | undefined, signal: AbortSignal): Promise<TaskCheck> {
  const image = harborSandboxImage(task, { network });
  const run = async (kind: 'noop' | 'oracle'): Promise<EpisodeResult> => {
    try {
      return await episode(provider, task, image, kind, signal);
    } catch (e) {
      // Ours (an image that does not build, an engine gone): the task is not checked, and says why.
      return { score: null, detail: isRftError(e) ? `${e.code}: ${e.message}` : (e as Error).message };
    }
  };
  // The no-op first: it builds the image the oracle's container then starts from at once.
  const noop = await run('noop');
  const oracle = await run('oracle');
  const ok = oracle.score !== null && Math.abs(oracle.score - 1) < 1e-9 && noop.score !== null && noop.score <= NOOP_MAX;
  return { task: task.name, oracle, noop, ok };
}

export interface HarborCheckOptions {
  concurrency?: string;
  json?: string;
  config?: string;
}

/** Checks a dataset; `progress` gets a line per task as it finishes. */
export async function runHarborCheck(dir: string, opts: HarborCheckOptions, progress: (line: string) => void): Promise<CheckReport> {
  const ds = readHarborDataset(dir);
  for (const bad of ds.invalid) progress(`invalid ${bad.dir}: ${bad.code}: ${bad.reason}`);
  const concurrency = opts.concurrency === undefined ? 4 : Number(opts.concurrency);
  if (!Number.isInteger(concurrency) || concurrency < 1) throw errors.cliUsage(`--concurrency must be a positive integer, got "${opts.concurrency}"`);
  const config = loadConfig(undefined, { configFile: opts.config });
  if (config.sandbox.driver !== 'docker') throw errors.cliUsage(`harbor check runs the tasks' images: it needs RFT_SANDBOX=docker (it is "${config.sandbox.driver}")`);
  const tasks = new HarborTasks();
  tasks.register('check', ds.tasks.map((t) => t.task));
  const log = pino({ level: process.env.RFT_LOG_LEVEL ?? 'warn' });
  const provider = await createSandboxProvider(config, log, { harborTasks: tasks.lookup });
  if (!provider) throw errors.cliUsage('harbor check needs sandboxes (RFT_SANDBOX=docker)');
  const results: TaskCheck[] = [];
  const abort = new AbortController();
  const onSignal = () => abort.abort();
  process.once('SIGINT', onSignal);
  try {
    const queue = ds.tasks.map((t) => t.task);
    let done = 0;
    const worker = async () => {
      for (let task = queue.shift(); task; task = queue.shift()) {
        const r = await checkTask(provider, task, config.sandbox.harborNetwork, abort.signal);
        results.push(r);
        done++;
        const fmt = (e: EpisodeResult) => `${e.score ?? 'none'} (${e.detail})`;
        progress(`[${done}/${ds.tasks.length}] ${r.ok ? 'ok  ' : 'FAIL'} ${task.name}: oracle ${fmt(r.oracle)}, no-op ${fmt(r.noop)}`);
      }
    };
    await Promise.all(Array.from({ length: Math.min(concurrency, ds.tasks.length) }, worker));
  } finally {
    process.off('SIGINT', onSignal);
    await provider.close();
  }
  results.sort((a, b) => a.task.localeCompare(b.task));
  const report: CheckReport = { dir: ds.root, tasks: results, invalid: ds.invalid, ok: ds.invalid.length === 0 && results.every((r) => r.ok) && results.length > 0 };
  if (opts.json) writeFileSync(opts.json, `${JSON.stringify(report, null, 2)}\n`);
  return report;
}

export function register(program: Command): void {
  const harbor = program.command('harbor').description('Harbor tasks (docs/harbor.md)');
  harbor
    .command('check')
    .description(
      "check every task of a Harbor dataset on Docker: its image builds, its oracle (solution/solve.sh) scores 1 and a no-op episode at most 0.05; " +
        'invalid tasks are named with the reason; exit 1 on any failure',
    )
    .argument('<dir>', 'a folder of Harbor tasks (a tree of task folders, dataset.toml or registry.json)')
    .option('--concurrency <n>', 'tasks checked at once (default 4)')
    .option('--json <out>', 'also write the report as JSON')
    .option('-c, --config <file>', 'JSON config file, as for serve (RFT_SANDBOX, RFT_DOCKER_*, RFT_HARBOR_NETWORK...)')
    .action(async (dir: string, opts: HarborCheckOptions) => {
      const report = await runHarborCheck(dir, opts, (line) => process.stderr.write(`${line}\n`));
      const passed = report.tasks.filter((t) => t.ok).length;
      process.stdout.write(`${passed}/${report.tasks.length} tasks pass; ${report.invalid.length} invalid\n`);
      if (!report.ok) process.exitCode = 1;
    });
}
