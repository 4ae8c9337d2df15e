// One /run_code request in a fresh sandbox of the configured driver: files in, the program with the
// request's time and memory limits (never above the driver's), files out, the sandbox destroyed.
// The program's own outcome (exit code, signal, time limit, a sandbox it took down) is the reply, its
// output whole (launcher.py passes it on and drains the rest: more than RUN_CODE_MAX_OUTPUT_BYTES is a
// 504, never a cut reply verl would score as a wrong answer); a failure of ours throws
// RFT_ERR_RUN_CODE_UNAVAILABLE (504, the status verl retries).
import { readFileSync } from 'node:fs';
import { constants } from 'node:os';
import { join } from 'node:path';
import { errors, isRftError } from '../../errors.js';
import type { SandboxProvider } from '../../sandbox/provider.js';
import type { ExecResult, Sandbox, SandboxLimits } from '../../sandbox/types.js';
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

/** The most of each of stdout and stderr returned, whole (SandboxFusion returns all of it); more is a 504. */
export const RUN_CODE_MAX_OUTPUT_BYTES = 4 * 1024 * 1024;

const LAUNCHER = readFileSync(join(import.meta.dirname, 'launcher.py'), 'utf8');
/** launcher.py's last stderr line: the program's returncode and the bytes it printed on stdout and stderr. */
const TRAILER = /\0rft-run-code (-?\d+) (\d+) (\d+)\n$/;

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

/**
 * The launcher's report, taken off stderr: only when the exit status agrees with it (the launcher exits
 * with the program's status, 128 + N for signal N), so nothing the program writes can change its outcome.
 */
function launched(r: ExecResult): { stderr: string; returnCode: number; printed: [number, number] } | undefined {
  const m = TRAILER.exec(r.stderr);
  if (!m) return undefined;
  const code = Number(m[1]);
  if (r.exitCode !== (code < 0 ? 128 - code : code)) return undefined;
  return { stderr: r.stderr.slice(0, m.index), returnCode: code, printed: [Number(m[2]), Number(m[3])] };
}

/** The run as SandboxFusion reports it; more output than is returned whole throws (a time limit is the program's own, whatever it printed). */
function outcome(r: ExecResult): CommandRunResult {
  // (the launcher killed with the program, by a time limit or by the program itself, reports nothing)
  const end = launched(r);
  const stderr = end?.stderr ?? r.stderr;
  if (r.timedOut) return { status: 'TimeLimitExceeded', execution_time: r.durationMs / 1000, return_code: null, stdout: r.stdout, stderr };
  if (end && Math.max(...end.printed) > RUN_CODE_MAX_OUTPUT_BYTES) throw errors.runCodeOutputTooLarge(RUN_CODE_MAX_OUTPUT_BYTES);
  return { status: 'Finished', execution_time: r.durationMs / 1000, return_code: end?.returnCode ?? returnCode(r.exitCode, r.signal), stdout: r.stdout, stderr };
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
    // RLIMIT_DATA, as the driver's own memory limit (src/sandbox/limits.ts): lowered, never raised;
    // under gVisor, which does not apply it, RLIMIT_AS too (Sandbox.memoryRlimit), so the request's
    // limit binds there as well, not only the container's.
    const kb = Math.floor(memoryBytes(req, o.limits) / 1024);
    const rlimits = sb.memoryRlimit === 'address-space' ? `ulimit -d ${kb} && ulimit -v ${kb}` : `ulimit -d ${kb}`;
    const argv = ['/bin/sh', '-c', `${rlimits} && exec python3 -I -S -c "$0" "$@"`, LAUNCHER, String(RUN_CODE_MAX_OUTPUT_BYTES), ...runner.argv];
    let run: CommandRunResult;
    try {
      // (room for the launcher's report past the program's stderr)
      run = outcome(await sb.exec(argv, { stdin: req.stdin ?? '', timeoutMs, maxOutputBytes: RUN_CODE_MAX_OUTPUT_BYTES + 256 }));
    } catch (e) {
      if (isRftError(e) && e.code === errors.runCodeOutputTooLarge.code) throw e;
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
