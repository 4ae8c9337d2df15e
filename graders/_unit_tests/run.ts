// Runs a task's hidden cases against a workspace snapshot in a fresh sandbox and reads the runner's
// nonce-tagged result line. The runner and the cases go into a directory named by a random nonce,
// written after the agent's files, so nothing the agent did during the rollout could be there.
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Sandbox } from '../../src/index.js';
import type { CasesFile } from './cases.js';

const RUNNER = join(import.meta.dirname, 'runner.py');

export interface CaseResult {
  name: string;
  passed: boolean;
  detail: string;
}

export interface RunOutcome {
  cases: CaseResult[] | null;
  /** Why there is no result (the runner died, was killed or timed out). */
  failure: string | null;
}

/** Puts the runner and cases into `wsDir` (a host copy of the workspace); returns what to exec. */
export async function stageRunner(wsDir: string, cases: CasesFile): Promise<{ nonce: string; dir: string }> {
  const nonce = randomBytes(16).toString('hex');
  const dir = `.rft-grader-${nonce}`;
  await mkdir(join(wsDir, dir)); // fails if it exists: the agent could not have guessed the nonce
  await writeFile(join(wsDir, dir, 'runner.py'), await readFile(RUNNER), { flag: 'wx' });
  await writeFile(join(wsDir, dir, 'cases.json'), JSON.stringify(cases), { flag: 'wx' });
  return { nonce, dir };
}

export async function runStaged(sandbox: Sandbox, staged: { nonce: string; dir: string }, cases: CasesFile, signal: AbortSignal): Promise<RunOutcome> {
  const budgetMs = Math.ceil(cases.cases.length * (cases.timeout_s + 2) * 1000) + 10_000;
  const r = await sandbox.exec(['python3', '-I', `${staged.dir}/runner.py`], {
    stdin: JSON.stringify({ nonce: staged.nonce, dir: staged.dir }),
    timeoutMs: budgetMs,
    maxOutputBytes: 1024 * 1024,
    signal,
  });
  const tag = `RFT-RESULT ${staged.nonce} `;
  const line = r.stdout.split('\n').find((l) => l.startsWith(tag));
  if (line === undefined) {
    const why = r.timedOut ? `timed out after ${budgetMs} ms` : `exit code ${r.exitCode ?? r.signal}`;
    return { cases: null, failure: `the test runner gave no result (${why}): ${r.stderr.trim().slice(-500)}` };
  }
  const parsed = JSON.parse(line.slice(tag.length)) as { cases: CaseResult[] };
  return { cases: parsed.cases, failure: null };
}
