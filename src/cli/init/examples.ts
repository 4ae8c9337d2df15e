// What `rft-endpoints init --example NAME` copies from this package into a new project. Paths are
// relative to the package root; units are copied with every module they import relatively (their
// `_lib/` code), to `tools/` and `graders/` of the project. Data the units read by path keeps the
// same relative path, so the units run unchanged (finqa's documents at examples/finqa/docs, the
// coding tasks under the sandbox templates root, ./examples).

export interface ExampleSpec {
  summary: string;
  /** [path in the package, path in the project] of each unit file. */
  units: [string, string][];
  /** Files or folders copied as they are, same path in the project. */
  assets: string[];
  /** [path in the package, file name in the project] of the dataset files. */
  datasets: [string, string][];
  job: string;
  /** Scripted model turns for the dataset, copied as scripted.jsonl (`rollout --model scripted:scripted.jsonl`). */
  script: string;
  grader: string;
  /** NeMo Gym's `domain` for the project's resources server (nemo-gym.yaml). */
  gymDomain: string;
  /**
   * Tools served by a Python MCP server (FastMCP) instead of TypeScript units: its files, copied to
   * tools/, and the names of its tools. The server runs each tools/*.py in each rollout's sandbox
   * from the project's .venv (no mcp.json: mcp/config.ts pythonToolServers), which `npm install` makes.
   */
  python?: { files: [string, string][]; tools: string[] };
}

const same = (...paths: string[]): [string, string][] => paths.map((p) => [p, p]);

export const EXAMPLES = {
  finqa: {
    summary: 'research over 21 short financial reports (search_docs, list_docs, read_doc), graded by answer_match',
    units: same('tools/search_docs.ts', 'tools/list_docs.ts', 'tools/read_doc.ts', 'graders/answer_match.ts'),
    assets: ['examples/finqa/docs'],
    datasets: [
      ['examples/finqa/train.jsonl', 'train.jsonl'],
      ['examples/finqa/valid.jsonl', 'valid.jsonl'],
    ],
    job: 'examples/finqa/job.json',
    script: 'examples/finqa/scripted.jsonl',
    grader: 'answer_match',
    gymDomain: 'agent',
  },
  coding: {
    summary: 'bug-fix tasks in a per-rollout sandbox (shell, read_file, write_file, apply_patch, list_files, search), graded by hidden unit tests',
    units: same(
      'tools/list_files.ts',
      'tools/read_file.ts',
      'tools/search.ts',
      'tools/shell.ts',
      'tools/apply_patch.ts',
      'tools/write_file.ts',
      'graders/unit_tests.ts',
    ),
    assets: ['graders/_unit_tests/runner.py', 'examples/coding/tasks'],
    datasets: [['examples/coding/train.jsonl', 'train.jsonl']],
    job: 'examples/coding/job.json',
    script: 'examples/coding/scripted.jsonl',
    grader: 'unit_tests',
    gymDomain: 'coding',
  },
  blank: {
    summary: 'one tool (lookup_price) and one grader (price_match) to replace with your own',
    units: [
      ['examples/blank/tools/lookup_price.ts', 'tools/lookup_price.ts'],
      ['examples/blank/graders/price_match.ts', 'graders/price_match.ts'],
    ],
    assets: [],
    datasets: [['examples/blank/train.jsonl', 'train.jsonl']],
    job: 'examples/blank/job.json',
    script: 'examples/blank/scripted.jsonl',
    grader: 'price_match',
    gymDomain: 'agent',
  },
  python: {
    summary: 'Python tools (calculate, describe_numbers, note) in a FastMCP server, tools/server.py, run in each rollout\'s sandbox; graded by graders/number_match.py, a python grader',
    units: [['examples/python/graders/number_match.py', 'graders/number_match.py']],
    assets: [],
    datasets: [['examples/python/train.jsonl', 'train.jsonl']],
    job: 'examples/python/job.json',
    script: 'examples/python/scripted.jsonl',
    grader: 'number_match',
    gymDomain: 'agent',
    python: {
      files: [
        ['examples/python/tools/server.py', 'tools/server.py'],
        ['examples/python/tools/requirements.txt', 'tools/requirements.txt'],
      ],
      tools: ['calculate', 'describe_numbers', 'note'],
    },
  },
} as const satisfies Record<string, ExampleSpec>;

export type ExampleName = keyof typeof EXAMPLES;

export function isExampleName(v: string): v is ExampleName {
  return Object.hasOwn(EXAMPLES, v);
}
