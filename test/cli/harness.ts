// Shared setup of the CLI tests: the real CLI as a child process, unit dirs built from the repo's
// tools and graders (re-exported, or wrapped to change one behaviour), and the finqa dataset with a
// scripted model that plays it.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll } from 'vitest';
import type { DatasetRow } from '../../src/cli/rollout/dataset.js';
import type { Script } from '../helpers/scripted-model.js';

export const repoRoot = resolve(import.meta.dirname, '../..');

const tempDirs: string[] = [];

export function tempDir(prefix = 'rft-cli-'): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  tempDirs.push(d);
  return d;
}

export function removeTempDirs(): void {
  for (const d of tempDirs.splice(0)) rmSync(d, { recursive: true, force: true });
}

/** A unit file that is exactly the repo's unit at `repoPath` (e.g. 'tools/read_doc.ts'). */
export function reexport(repoPath: string): string {
  return `export { default } from ${JSON.stringify(join(repoRoot, repoPath))};\n`;
}

/** A dir of unit files, name -> source. */
export function unitsDir(files: Record<string, string>): string {
  const d = tempDir('rft-units-');
  for (const [name, src] of Object.entries(files)) writeFileSync(join(d, name), src);
  return d;
}

export const FINQA_TOOLS = ['search_docs', 'list_docs', 'read_doc'] as const;

export function finqaToolsDir(overrides: Record<string, string> = {}): string {
  return unitsDir({ ...Object.fromEntries(FINQA_TOOLS.map((t) => [`${t}.ts`, reexport(`tools/${t}.ts`)])), ...overrides });
}

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** CLI processes of this test file still running: a failed test never waits for its own. */
const running = new Set<ChildProcess>();
// Registered when a test file imports this module, so after the file's own afterAll hooks.
// Benches import these helpers outside vitest, where there are no hooks.
if (process.env.VITEST) afterAll(() => {
  for (const child of running) child.kill('SIGKILL');
});

export function spawnCli(args: string[], env: Record<string, string> = {}): ChildProcess {
  const child = spawn(process.execPath, [join(repoRoot, 'bin/rft-endpoints.js'), ...args], {
    cwd: repoRoot,
    // No inherited credentials or model endpoint: every test names its own, on loopback.
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? tmpdir(), NO_COLOR: '1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  child.once('exit', () => running.delete(child));
  return child;
}

export function runCli(args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  const child = spawnCli(args, env);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}

export function readJsonl<T>(file: string): T[] {
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as T);
}

export function writeJsonl(file: string, rows: unknown[]): void {
  writeFileSync(file, rows.map((r) => JSON.stringify(r)).join('\n') + '\n');
}

const SHIPPED_DATASETS = ['examples/finqa/dataset.jsonl', 'examples/finqa/train.jsonl'];

/**
 * The first `n` rows of the shipped finqa dataset, or, while it is not there, rows of our own
 * written against the same tools (schemas from the server's GET /v1/tools).
 */
export function finqaRows(n: number, tools: DatasetRow['tools']): DatasetRow[] {
  const shipped = SHIPPED_DATASETS.map((p) => join(repoRoot, p)).find((p) => existsSync(p));
  if (shipped) return readJsonl<DatasetRow>(shipped).slice(0, n);
  const questions: [string, string][] = [
    ['What was Bluefinch total revenue in fiscal year 2024?', '412.6'],
    ['Which company did Bluefinch acquire?', 'Lumenward'],
    ['What was Corvane revenue in the first half of 2025?', '1.84'],
    ['What was Halvorsen second quarter 2025 revenue?', '96.3'],
  ];
  return questions.slice(0, n).map(([q, a]) => ({
    messages: [
      { role: 'system', content: 'Answer from the documents. End with "Answer: <answer>".' },
      { role: 'user', content: q },
    ],
    ...(tools ? { tools } : {}),
    reference_answer: a,
  }));
}

function referenceOf(row: DatasetRow): string {
  const r = row.reference_answer;
  return typeof r === 'string' || typeof r === 'number' ? String(r) : '';
}

function userTextOf(row: DatasetRow): string {
  const m = [...row.messages].reverse().find((x) => x.role === 'user');
  return typeof m?.content === 'string' ? m.content : '';
}

/**
 * Plays each row in three turns (parallel search_docs + list_docs, then read_doc of the first hit,
 * then an answer) and answers so rows differ in signal: row 0 right on every other try, row 1
 * always right, the others always wrong.
 */
export function finqaScript(rows: DatasetRow[]): Script {
  const byQuestion = new Map(rows.map((r, i) => [userTextOf(r), { index: i, reference: referenceOf(r) }]));
  const tries = new Map<string, number>();
  return (ctx) => {
    if (ctx.turn === 0) return { calls: [{ name: 'search_docs', arguments: { query: ctx.userText } }, { name: 'list_docs', arguments: {} }] };
    if (ctx.turn === 1) {
      const id = /"doc_id"\s*:\s*"([^"]+)"/.exec(ctx.toolOutputs.join('\n'))?.[1] ?? 'unknown-doc';
      return { calls: [{ name: 'read_doc', arguments: { doc_id: id } }] };
    }
    const row = byQuestion.get(ctx.userText);
    const n = tries.get(ctx.userText) ?? 0;
    tries.set(ctx.userText, n + 1);
    const right = row?.index === 1 || (row?.index === 0 && n % 2 === 0);
    return { text: `Answer: ${right ? row?.reference : 'I could not find it'}` };
  };
}

export interface ServerLike {
  url: string;
  key: string;
}

/** GET a management route of a test server with its key. */
export async function getJson<T>(s: ServerLike, path: string): Promise<T> {
  const res = await fetch(`${s.url}${path}`, { headers: { authorization: `Bearer ${s.key}` } });
  return (await res.json()) as T;
}

/** The first `n` finqa rows with the server's tool schemas, written to a dataset file in a fresh dir. */
export async function prepareFinqa(s: ServerLike, n: number): Promise<{ rows: DatasetRow[]; dataset: string; work: string }> {
  const { tools } = await getJson<{ tools: DatasetRow['tools'] }>(s, '/v1/tools');
  const rows = finqaRows(n, tools);
  const work = tempDir();
  const dataset = join(work, 'dataset.jsonl');
  writeJsonl(dataset, rows);
  return { rows, dataset, work };
}

/**
 * Sends `signal` to a running CLI once `file` holds `lines` complete lines; resolves with the exit
 * code and stdout. A child that exits earlier fails the wait with its stderr instead of hanging.
 */
export function signalAfterLines(child: ChildProcess, file: string, lines: number, signal: NodeJS.Signals): Promise<{ code: number | null; stdout: string }> {
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  let sent = false;
  const poll = setInterval(() => {
    const complete = existsSync(file) ? readFileSync(file, 'utf8').split('\n').length - 1 : 0;
    if (!sent && complete >= lines) {
      sent = true;
      child.kill(signal);
    }
  }, 20);
  return new Promise((resolve, reject) =>
    child.on('close', (code) => {
      clearInterval(poll);
      if (sent) resolve({ code, stdout });
      else reject(new Error(`the CLI exited (${code}) before writing ${lines} lines: ${stderr.slice(-1000)}`));
    }),
  );
}
