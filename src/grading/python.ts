// OpenAI `python` grader configs run locally: the config's `grade(sample, item)` runs in a fresh
// sandbox of the configured driver (no network, its process and memory limits) under OpenAI's time
// limit, through python-grader.py. The score comes back on the sandbox's private result channel
// (ExecOptions.resultChannel, the one graders/_unit_tests/runner.py reports on), so nothing the
// answer makes the grader print can stand for a score. Anything but one finite number (a loop
// killed at the time limit, a fork bomb, a refused socket, an exception, NaN) is a grader failure:
// RFT_ERR_GRADER_FAILED, the trainer's "could not grade", never a 0. An answer too deep for Python's
// json is not such a failure: it reaches grade() with output_json None (python-grader.py).
import { spawnSync } from 'node:child_process';
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

/** The value's JSON text, or "null" past the depth JSON.stringify can write (about 4,000 levels). */
function jsonTextOrNull(v: unknown): string {
  try {
    return JSON.stringify(v) ?? 'null';
  } catch (e) {
    if (e instanceof RangeError) return 'null';
    throw e;
  }
}

export async function runPythonSource(name: string, source: string, sample: Sample, item: Item, run: PythonRun): Promise<number> {
  const sandbox = await run.sandbox();
  const timeoutMs = run.timeoutMs ?? PYTHON_TIMEOUT_MS;
  // output_json as text of its own: the runner parses it apart, so a depth Python's json cannot read is None (the answer's text is graded).
  const { output_json: outputJson, ...rest } = sample;
  const r = await sandbox.exec(['python3', '-I', '-c', RUNNER], {
    stdin: JSON.stringify({ source, sample: rest, ...(outputJson === undefined ? {} : { output_json: jsonTextOrNull(outputJson) }), item }),
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

// Compiles a grader's source (never runs it) and looks for a top-level `grade`: one JSON line back.
const CHECK = `import ast, json, sys
src = sys.stdin.read()
try:
    tree = ast.parse(src, sys.argv[1])
except SyntaxError as e:
    print(json.dumps({"line": e.lineno, "error": f"{type(e).__name__}: {e.msg}"}))
    sys.exit(0)
names = set()
for n in tree.body:
    if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        names.add(n.name)
    elif isinstance(n, ast.Assign):
        names.update(t.id for t in n.targets if isinstance(t, ast.Name))
    elif isinstance(n, (ast.Import, ast.ImportFrom)):
        names.update((a.asname or a.name).split(".")[0] for a in n.names)
print(json.dumps({} if "grade" in names else {"line": None, "error": "defines no grade(sample, item) function"}))
`;

/**
 * Why a grader file's Python source cannot be a grader, with the line (a SyntaxError, no top-level
 * `grade`), or null. Compiled by the host's python3 at boot; without one, null (the sandbox's
 * Python then reports a bad source as the grader failing).
 */
export function checkPythonSource(file: string, source: string): { line: number | null; error: string } | null {
  const r = spawnSync('python3', ['-I', '-c', CHECK, file], { input: source, encoding: 'utf8', timeout: 30_000 });
  if (r.error || r.status !== 0) return null;
  try {
    const v = JSON.parse(r.stdout) as { line?: number | null; error?: string };
    return typeof v.error === 'string' ? { line: v.line ?? null, error: v.error } : null;
  } catch {
    return null;
  }
}
