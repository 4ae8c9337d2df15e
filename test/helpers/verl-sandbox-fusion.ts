// verl's SandboxFusion code reward, replayed as verl/utils/reward_score/sandbox_fusion/{__init__,utils}.py
// make their requests (verl cannot be installed here): compute_score cuts the code from the completion's
// ```python fence, check_correctness sends one /run_code per test case (the assert case appended to the
// code), call_sandbox_api posts json.dumps of the payload and retries a 504 alone, 3 tries; a case
// passes on Success with stdout equal to the expected output (trailing newlines trimmed), and the score
// is passed / total. The fn_name wrapper is not replayed (the cases here are stdin/stdout or asserts).
import { pyJsonDumps } from './reward-clients.js';

export interface TestCases {
  inputs?: (string | null)[];
  outputs?: (string | null)[];
  assert_case?: string[];
}

export interface CaseResult {
  /** true, false, or verl's error codes: -1 API or sandbox error, -2 runtime error, -3 timeout, -4 compile error. */
  result: boolean | number;
  /** The statuses of each try. */
  statuses: number[];
  response: Record<string, unknown> | undefined;
}

/** call_sandbox_api: 504 is retried (after 1 s, then 2 s: `wait` stands for those sleeps), anything else ends it (statuses: 0 for no reply). */
export async function callSandboxApi(
  url: string,
  code: string,
  stdin: string | null,
  timeout: number,
  memoryLimitMb: number,
  language = 'python',
  wait: (delaySeconds: number) => Promise<void> = (s) => new Promise((r) => setTimeout(r, s * 1000)),
): Promise<{ response: Record<string, unknown> | undefined; statuses: number[] }> {
  const payload = pyJsonDumps({
    compile_timeout: timeout, run_timeout: timeout, code, stdin, memory_limit_MB: memoryLimitMb, language, files: {}, fetch_files: [],
  });
  const statuses: number[] = [];
  for (let attempt = 0; attempt < 3; attempt++) {
    // A request error (a timeout, a connection reset) or a reply that is not JSON ends the tries: -1.
    let res: Response;
    let text: string;
    try {
      res = await fetch(url, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
        body: payload,
        signal: AbortSignal.timeout((timeout + timeout + 10) * 1000),
      });
      text = await res.text();
    } catch {
      statuses.push(0);
      return { response: undefined, statuses };
    }
    statuses.push(res.status);
    if (res.status === 504) {
      if (attempt < 2) await wait(attempt + 1);
      continue;
    }
    if (res.status >= 400) return { response: undefined, statuses };
    try {
      return { response: JSON.parse(text) as Record<string, unknown>, statuses };
    } catch {
      return { response: undefined, statuses };
    }
  }
  return { response: undefined, statuses };
}

type RunResult = { status?: string; stdout?: string | null; return_code?: number | null } | null | undefined;

/** _process_single_case's reading of a reply. */
export function caseResult(response: Record<string, unknown> | undefined, expected: string | null): boolean | number {
  if (!response) return -1;
  const compile = response.compile_result as RunResult;
  const run = response.run_result as RunResult;
  switch (response.status) {
    case 'SandboxError':
      return -1;
    case 'Failed':
      if (compile && (compile.status === 'Error' || compile.status === 'TimeLimitExceeded' || (compile.status === 'Finished' && compile.return_code !== 0))) return -4;
      if (!run) return -1;
      if (run.status === 'TimeLimitExceeded') return -3;
      if (run.status === 'Error' || (run.status === 'Finished' && run.return_code !== 0)) return -2;
      return -1;
    case 'Success':
      if (!run || run.status !== 'Finished') return -1;
      return expected === null || (run.stdout ?? '').replace(/\n+$/, '') === expected.replace(/\n+$/, '');
    default:
      return -1;
  }
}

/** compute_score(url, semaphore, memory_limit_mb, completion, test_cases, continuous=False, timeout) with `concurrency` cases at once. */
export async function computeScore(
  url: string,
  completion: string,
  testCases: TestCases,
  opts: { memoryLimitMb?: number; timeout?: number; concurrency?: number; language?: string } = {},
): Promise<{ score: number; cases: CaseResult[] }> {
  let solution: string;
  if (completion.includes('```python')) solution = completion.split('```python').at(-1)!.split('```')[0]!;
  else if (completion.includes('```')) {
    solution = completion.split('```')[1]!;
    const nl = solution.indexOf('\n');
    if (nl >= 0 && /^[A-Za-z]+$/.test(solution.slice(0, nl).trim())) solution = solution.slice(nl + 1);
  } else return { score: 0, cases: [] };
  const asserts = testCases.assert_case;
  const inputs = testCases.inputs ?? (asserts ? asserts.map(() => '') : []);
  const outputs = testCases.outputs ?? (asserts ? asserts.map(() => null) : []);
  const appended = asserts ?? inputs.map(() => '');
  const cases: CaseResult[] = new Array(inputs.length);
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < inputs.length; i = next++) {
      const stdin = inputs[i] === null || inputs[i] === undefined ? null : String(inputs[i]);
      const { response, statuses } = await callSandboxApi(url, `${solution}\n\n${appended[i]}`, stdin, opts.timeout ?? 10, opts.memoryLimitMb ?? 1024, opts.language ?? 'python');
      cases[i] = { result: caseResult(response, outputs[i] ?? null), statuses, response };
    }
  };
  await Promise.all(Array.from({ length: opts.concurrency ?? 4 }, worker));
  return { score: inputs.length ? cases.filter((c) => c.result === true).length / inputs.length : 0, cases };
}
