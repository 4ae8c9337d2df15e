// Runs a task's hidden cases against a workspace in a fresh sandbox and reads the runner's verdict
// from its private result channel (ExecOptions.resultChannel). The runner and the cases travel on
// the runner's stdin, which it reads whole before any of the agent's code runs: they never touch the
// workspace, and no command line holds anything worth stealing.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { errors, type Sandbox } from 'rft-endpoints';
import { driverModule } from 'rft-endpoints/sandbox';
import type { CasesFile } from './cases.js';

const RUNNER = readFileSync(join(import.meta.dirname, 'runner.py'), 'utf8');

export interface CaseResult {
  name: string;
  passed: boolean;
  detail: string;
  /** Kept off the CPU by something outside its sandbox (runner.py, "Time"): the grader decides whose. */
  starved?: boolean;
  /** Timed out wanting the CPU where its waits for it are unknown (runner.py): settled by runCases, never returned. */
  unsure?: boolean;
}

/**
 * The share of the CPU seconds its cases wanted that the sandbox must have got from the host for its
 * unsure cases to have timed out on their own: less, and the machine starved them.
 */
export const STARVED_BELOW = 0.5;

/** Never rejects: null where the driver cannot tell. */
const hostCpu = (sandbox: Sandbox): Promise<number | null> => (sandbox.cpuSeconds?.() ?? Promise.resolve(null)).catch(() => null);

/**
 * Settles the cases the runner was unsure of (timed out while they wanted the CPU, on a kernel that
 * does not tell a process's waits for it: gVisor has no schedstat) with the host's count of the
 * sandbox's CPU (Sandbox.cpuSeconds, the engine's cgroup), read once, after the run: all the fresh
 * sandbox used, its own start and the runner's too, so a little more than the cases got. Less than
 * STARVED_BELOW of the CPU seconds the cases wanted (runner.py) and they were starved (starved.ts
 * decides whose); else they timed out.
 */
async function settleUnsure(results: CaseResult[], wanted: number | undefined, sandbox: Sandbox): Promise<CaseResult[]> {
  if (!results.some((c) => c.unsure)) return results;
  const got = wanted === undefined ? null : await hostCpu(sandbox);
  const starved = got !== null && wanted !== undefined && got < STARVED_BELOW * wanted;
  return results.map(({ unsure, ...c }) =>
    unsure && starved ? { ...c, starved: true, detail: `starved: its sandbox got ${got.toFixed(2)} s of CPU from the host while its cases wanted ${wanted.toFixed(2)} s (${c.detail})` } : c,
  );
}

/** How many times its time limit a case may go without getting that far before it counts as starved (runner.py). */
export const STARVE_FACTOR = 6;

export interface RunOutcome {
  cases: CaseResult[] | null;
  /** Why there is no result (the runner died, was killed or timed out). */
  failure: string | null;
}

/** The runner's program: runner.py and the call that hands it the cases. */
export function runnerProgram(cases: CasesFile, starveFactor = STARVE_FACTOR, isolated = true): string {
  const spec = { ...cases, starve_factor: starveFactor, isolated };
  return `${RUNNER}\nmain("${Buffer.from(JSON.stringify(spec)).toString('base64')}")\n`;
}

/**
 * One result per case of the task, in its order, whatever the channel said: names the task does not
 * have are ignored, a name given twice counts once (the first), a case with no result failed.
 */
export function caseResults(reported: unknown, cases: CasesFile): CaseResult[] {
  const byName = new Map<string, CaseResult>();
  for (const r of Array.isArray(reported) ? (reported as unknown[]) : []) {
    const c = r as Partial<CaseResult> | null;
    if (!c || typeof c.name !== 'string' || byName.has(c.name)) continue;
    byName.set(c.name, {
      name: c.name,
      passed: c.passed === true,
      detail: typeof c.detail === 'string' ? c.detail : '',
      ...(c.starved === true && c.passed !== true ? { starved: true } : {}),
      ...(c.unsure === true && c.passed !== true ? { unsure: true } : {}),
    });
  }
  return cases.cases.map((c) => byName.get(c.name) ?? { name: c.name, passed: false, detail: 'no result' });
}

export async function runCases(sandbox: Sandbox, cases: CasesFile, signal: AbortSignal, starveFactor = STARVE_FACTOR): Promise<RunOutcome> {
  // Each case to its limit (a starved one to its cap within the others' unused time), and the runner's
  // own start on a loaded machine. Past it the runner gave no result, which scores no case: the cases
  // can stop or kill it (same uid), so running on until the grader's own timeout (a 5xx, ours) would
  // let them have their rollout discarded. Under that timeout: the examples' largest, 15 cases, 210 s of 300.
  const budgetMs = Math.ceil((cases.cases.length * (cases.timeout_s + 2) + 30) * 1000);
  const r = await sandbox.exec(['python3', '-I', '-'], {
    // Outside a sandbox of its own (the process driver) the runner's uid may be the server's: it
    // then kills only what came to it as subreaper, never every new process of the uid.
    stdin: runnerProgram(cases, starveFactor, driverModule(sandbox.driver)?.isolates === true),
    timeoutMs: budgetMs,
    maxOutputBytes: 1024 * 1024,
    signal,
    resultChannel: true,
  });
  if (r.result === undefined) throw errors.graderFailed('unit_tests', `the ${sandbox.driver} sandbox gave no result channel`);
  const line = r.result.trim();
  if (line === '') {
    // The agent's code can kill the runner (same uid) or exhaust its limits: that scores no case.
    const why = r.timedOut ? `timed out after ${budgetMs} ms` : `exit code ${r.exitCode ?? r.signal}`;
    return { cases: null, failure: `the test runner gave no result (${why}): ${r.stderr.trim().slice(-500)}` };
  }
  let verdict: { cases?: unknown; error?: unknown; wanted_cpu_s?: unknown };
  try {
    verdict = JSON.parse(line) as typeof verdict;
  } catch {
    // Only the runner holds the channel: a garbled verdict is our failure, not the agent's.
    throw errors.graderFailed('unit_tests', 'the test runner wrote an unreadable verdict');
  }
  if (typeof verdict.error === 'string') throw errors.graderFailed('unit_tests', verdict.error);
  const wanted = typeof verdict.wanted_cpu_s === 'number' && Number.isFinite(verdict.wanted_cpu_s) ? verdict.wanted_cpu_s : undefined;
  return { cases: await settleUnsure(caseResults(verdict.cases, cases), wanted, sandbox), failure: null };
}
