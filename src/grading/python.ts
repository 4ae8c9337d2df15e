// OpenAI `python` grader configs run locally: the config's `grade(sample, item)` runs in a fresh
// sandbox of the configured driver (no network, its process and memory limits) under OpenAI's time
// limit, through python-grader.py. The score comes back on the sandbox's private result channel
// (ExecOptions.resultChannel, the one graders/_unit_tests/runner.py reports on), so nothing the
// answer makes the grader print can stand for a score. Anything but one finite number (a loop
// killed at the time limit, a fork bomb, a refused socket, an exception, NaN) is a grader failure:
// RFT_ERR_GRADER_FAILED, the trainer's "could not grade", never a 0.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { errors } from '../errors.js';
import type { Item, Sample } from '../protocol/wire.js';
import type { Sandbox } from '../sandbox/types.js';

const RUNNER = readFileSync(join(import.meta.dirname, 'python-grader.py'), 'utf8');

/** OpenAI's documented limits: source under 256 kB, 2 minutes of execution. */
export const PYTHON_SOURCE_MAX_BYTES = 256 * 1024;
export const PYTHON_TIMEOUT_MS = 120_000;

export interface PythonRun {
  /** A fresh sandbox for one run (the grading context's freshSandbox). */
  sandbox: () => Promise<Sandbox>;
  signal?: AbortSignal | undefined;
  /** Defaults to OpenAI's 2 minutes. */
  timeoutMs?: number;
}

export async function runPythonSource(name: string, source: string, sample: Sample, item: Item, run: PythonRun): Promise<number> {
  const sandbox = await run.sandbox();
  const timeoutMs = run.timeoutMs ?? PYTHON_TIMEOUT_MS;
  const r = await sandbox.exec(['python3', '-I', '-c', RUNNER], {
    stdin: JSON.stringify({ source, sample, item }),
    timeoutMs,
    maxOutputBytes: 64 * 1024,
    resultChannel: true,
    ...(run.signal ? { signal: run.signal } : {}),
  });
  if (r.result === undefined) throw errors.graderFailed(name, `the ${sandbox.driver} sandbox gave no result channel`);
  const lines = r.result.split('\n').filter((l) => l.trim() !== '');
  if (lines.length !== 1) {
    const why = r.timedOut ? `timed out after ${timeoutMs} ms` : lines.length ? 'more than one result' : `no result (exit ${r.exitCode ?? r.signal})`;
    throw errors.graderFailed(name, `python grader: ${why}${r.stderr.trim() ? `: ${r.stderr.trim().slice(-300)}` : ''}`);
  }
  let verdict: { reward?: unknown; error?: unknown };
  try {
    verdict = JSON.parse(lines[0] as string) as typeof verdict;
  } catch {
    throw errors.graderFailed(name, 'python grader: unreadable result');
  }
  if (typeof verdict.error === 'string') throw errors.graderFailed(name, `python grader: ${verdict.error}`);
  if (typeof verdict.reward !== 'number' || !Number.isFinite(verdict.reward)) throw errors.graderFailed(name, 'python grader: no numeric reward');
  return verdict.reward;
}
