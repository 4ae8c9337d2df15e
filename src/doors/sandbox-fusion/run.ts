// One /run_code request in a fresh sandbox of the configured driver: files in, the program with the
// request's time and memory limits (never above the driver's), files out, the sandbox destroyed.
// The program's own outcome (exit code, signal, time limit, a sandbox it took down) is the reply;
// a failure of ours throws RFT_ERR_RUN_CODE_UNAVAILABLE (504, the status verl retries).
import { constants } from 'node:os';
import { errors, isRftError } from '../../errors.js';
import type { SandboxProvider } from '../../sandbox/provider.js';
import type { Sandbox, SandboxLimits } from '../../sandbox/types.js';
import { RUNNERS, type CommandRunResult, type RunCodeRequest, type RunCodeResponse } from './request.js';

export interface RunOptions {
  sandboxes: SandboxProvider;
  limits: SandboxLimits;
  /** How long a run may wait for a sandbox slot (RFT_SANDBOX_QUEUE_TIMEOUT_MS). */
  queueTimeoutMs: number;
  /** The largest fetched file returned (bigger ones are left out, as missing ones are). */
  maxFetchBytes: number;
}

export interface RunOutcome {
  response: RunCodeResponse;
  sandboxId: string;
  durationMs: number;
}

/** Slack verl's client allows beyond compile and run (API_TIMEOUT): a slot must come well within it. */
const CLIENT_SLACK_MS = 10_000;
const MARGIN_MS = 2_000;

/** The memory a run may use: the request's when it asks for less than the driver's (SandboxFusion's -1: no limit of its own). */
export function memoryBytes(req: RunCodeRequest, limits: SandboxLimits): number {
  const asked = req.memory_limit_MB > 0 ? req.memory_limit_MB * 1024 * 1024 : Infinity;
  return Math.min(asked, limits.memoryBytes);
}

function ours(e: unknown, why: string): never {
  const code = isRftError(e) ? e.code : e instanceof Error && e.name === 'TimeoutError' ? errors.sandboxQueueTimeout.code : 'RFT_ERR_INTERNAL';
  throw errors.runCodeUnavailable(code, why);
}

async function create(o: RunOptions, traceId: string, req: RunCodeRequest): Promise<Sandbox> {
  // verl gives up on a request after compile + run + 10 s: a slot must come early enough to run in that time.
  const waitMs = Math.min(o.queueTimeoutMs, Math.max(1_000, req.compile_timeout * 1000 + CLIENT_SLACK_MS - MARGIN_MS));
  try {
    return await o.sandboxes.createEphemeral({ traceId }, AbortSignal.timeout(waitMs));
  } catch (e) {
    return ours(e, 'no sandbox could be made for it in time');
  }
}

/** Writes the request's files (base64) into the workspace; a path outside it is the request's fault (4xx). */
async function filesIn(sb: Sandbox, files: RunCodeRequest['files']): Promise<void> {
  for (const [path, content] of Object.entries(files)) {
    // SandboxFusion's restore_files skips null contents and names holding IGNORE_THIS_FILE.
    if (content === null || path.includes('IGNORE_THIS_FILE')) continue;
    await sb.writeFile(path, Buffer.from(content, 'base64'));
  }
}

async function filesOut(sb: Sandbox, paths: string[], maxBytes: number): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const path of paths) {
    // A file the program did not leave (or one out of reach) is left out, as SandboxFusion does.
    const data = await sb.readFile(path, { maxBytes: maxBytes + 1 }).catch((e: unknown) => {
      if (isRftError(e) && e.statusCode >= 500) throw e;
      return undefined;
    });
    if (data !== undefined && data.length <= maxBytes) out[path] = data.toString('base64');
  }
  return out;
}

/** Python's returncode for a program a signal ended: minus the signal's number (SandboxFusion reports it so). */
function returnCode(exitCode: number | null, signal: string | null): number | null {
  if (exitCode !== null) return exitCode;
  const n = signal === null ? undefined : (constants.signals as Record<string, number>)[signal];
  return n === undefined ? null : -n;
}

export async function runCode(o: RunOptions, traceId: string, req: RunCodeRequest): Promise<RunOutcome> {
  const runner = RUNNERS[req.language];
  if (!runner) throw errors.runCodeLanguage(req.language, Object.keys(RUNNERS));
  const started = performance.now();
  const sb = await create(o, traceId, req);
  try {
    try {
      await filesIn(sb, req.files);
      await sb.writeFile(runner.file, req.code);
    } catch (e) {
      if (isRftError(e) && e.statusCode < 500) throw e;
      ours(e, 'its files could not be written');
    }
    const timeoutMs = Math.max(1, Math.min(req.run_timeout * 1000, o.limits.wallTimeoutMs));
    // RLIMIT_DATA, as the driver's own memory limit (src/sandbox/limits.ts): lowered, never raised.
    const kb = Math.floor(memoryBytes(req, o.limits) / 1024);
    let run: CommandRunResult;
    try {
      const r = await sb.exec(`ulimit -d ${kb} && exec ${runner.command}`, { stdin: req.stdin ?? '', timeoutMs, maxOutputBytes: o.limits.maxOutputBytes });
      run = r.timedOut
        ? { status: 'TimeLimitExceeded', execution_time: r.durationMs / 1000, return_code: null, stdout: r.stdout, stderr: r.stderr }
        : { status: 'Finished', execution_time: r.durationMs / 1000, return_code: returnCode(r.exitCode, r.signal), stdout: r.stdout, stderr: r.stderr };
    } catch (e) {
      // The program took its sandbox down (RFT_ERR_SANDBOX_ENDED_BY_ROLLOUT, a 4xx): its own failure.
      if (!isRftError(e) || e.statusCode >= 500) ours(e, 'its sandbox failed while it ran');
      run = { status: 'Error', execution_time: null, return_code: null, stdout: '', stderr: `${e.code}: ${e.message}` };
    }
    let files: Record<string, string>;
    try {
      files = await filesOut(sb, req.fetch_files, o.maxFetchBytes);
    } catch (e) {
      ours(e, 'its files could not be read back');
    }
    const ok = run.status === 'Finished' && run.return_code === 0;
    const response: RunCodeResponse = {
      status: ok ? 'Success' : 'Failed',
      message: '',
      compile_result: null,
      run_result: run,
      executor_pod_name: null,
      files,
    };
    return { response, sandboxId: sb.id, durationMs: performance.now() - started };
  } finally {
    await sb.destroy().catch(() => {});
  }
}
