// Builds train.jsonl from tasks/*: one row per task, with the task statement (its workspace
// README.md) as the user message, the coding tools' schemas generated from their zod parameters the
// way GET /v1/tools does, and `sandbox` naming the template and the hidden tests. Before writing it
// checks each task: the reference patch applies to the template, the hidden cases parse, and the
// hidden folder is not inside the template.
//
//   node --conditions=rft-source --import tsx examples/coding/build-dataset.ts          # check and write
//   node --conditions=rft-source --import tsx examples/coding/build-dataset.ts --check  # check, and fail if train.jsonl is stale
import { existsSync } from 'node:fs';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { chatCompletionsTools, checkTool, type LoadedTool } from '../../src/registry/loader.js';
import { parsePatch, planPatch } from '../../tools/_lib/patch/index.js';
import { readCases } from '../../graders/_unit_tests/cases.js';
import applyPatch from '../../tools/apply_patch.js';
import listFiles from '../../tools/list_files.js';
import readFileTool from '../../tools/read_file.js';
import search from '../../tools/search.js';
import shell from '../../tools/shell.js';
import writeFileTool from '../../tools/write_file.js';

const here = (p: string): string => fileURLToPath(new URL(p, import.meta.url));

export const TASKS_DIR = here('./tasks/');
export const TRAIN_FILE = here('./train.jsonl');
/** The ledger's limit per rollout, and the number of calls after which the grader starts to discount. */
export const TOOL_BUDGET = 30;
export const BUDGET_TARGET = 12;

const LANGUAGE = { python: 'Python 3', node: 'JavaScript (Node.js)' } as const;

export const systemPrompt = (language: keyof typeof LANGUAGE): string => [
  `You are a software engineer working in a small ${LANGUAGE[language]} repository; the workspace root is the current directory (/workspace).`,
  'Use the tools to read the code (list_files, read_file, search), run commands and tests (shell), and change files (apply_patch, write_file).',
  'Fix the code so that it does what the task asks. Hidden tests with more cases than the visible ones decide the result,',
  'so fix the behaviour described, not only the visible tests; changing the tests does not help.',
  'When you are done, reply with a short summary of the fix.',
].join(' ');

export interface TaskRow {
  task_id: string;
  messages: { role: 'system' | 'user'; content: string }[];
  tools: unknown[];
  sandbox: { template: string; hidden: string };
  tool_budget: number;
  unit_tests: { mode: 'improvement' | 'fraction'; budget_target: number };
}

const codingTools = (): unknown[] => {
  const defs = [listFiles, readFileTool, search, shell, applyPatch, writeFileTool];
  const tools = new Map<string, LoadedTool>(defs.map((d) => [d.name, checkTool(`tools/${d.name}.ts`, d)]));
  return chatCompletionsTools({ tools, graders: new Map() });
};

/** Every problem with the task folders (empty when all are usable). */
export async function checkTasks(ids: string[]): Promise<string[]> {
  const problems: string[] = [];
  for (const id of ids) {
    const dir = join(TASKS_DIR, id);
    const ws = join(dir, 'workspace');
    if (!existsSync(join(ws, 'README.md'))) problems.push(`${id}: workspace/README.md (the task statement) is missing`);
    if (existsSync(join(ws, 'hidden')) || existsSync(join(ws, 'cases.json'))) problems.push(`${id}: hidden tests inside the workspace`);
    try {
      await readCases(join(dir, 'hidden'));
    } catch (e) {
      problems.push(`${id}: ${(e as Error).message}`);
    }
    try {
      const patch = parsePatch(await readFile(join(dir, 'solution.patch'), 'utf8'));
      await planPatch(patch, async (p) => (existsSync(join(ws, p)) ? readFile(join(ws, p), 'utf8') : null));
    } catch (e) {
      problems.push(`${id}: solution.patch does not apply: ${(e as Error).message}`);
    }
  }
  return problems;
}

export async function taskIds(): Promise<string[]> {
  return (await readdir(TASKS_DIR, { withFileTypes: true })).filter((e) => e.isDirectory()).map((e) => e.name).sort();
}

export async function buildRows(ids: string[]): Promise<TaskRow[]> {
  const tools = codingTools();
  const rows: TaskRow[] = [];
  for (const id of ids) {
    const statement = (await readFile(join(TASKS_DIR, id, 'workspace/README.md'), 'utf8')).trim();
    const { language } = await readCases(join(TASKS_DIR, id, 'hidden'));
    rows.push({
      task_id: id,
      messages: [
        { role: 'system', content: systemPrompt(language) },
        { role: 'user', content: statement },
      ],
      tools,
      sandbox: { template: `coding/tasks/${id}/workspace`, hidden: `coding/tasks/${id}/hidden` },
      tool_budget: TOOL_BUDGET,
      // improvement: doing nothing scores 0 (what training needs); fraction credits what the template already passes.
      unit_tests: { mode: 'improvement', budget_target: BUDGET_TARGET },
    });
  }
  return rows;
}

export const toJsonl = (rows: unknown[]): string => rows.map((r) => JSON.stringify(r)).join('\n') + '\n';

async function main(): Promise<void> {
  const ids = await taskIds();
  const problems = await checkTasks(ids);
  if (problems.length) {
    console.error(problems.join('\n'));
    process.exit(1);
  }
  const text = toJsonl(await buildRows(ids));
  if (process.argv.includes('--check')) {
    const current = existsSync(TRAIN_FILE) ? await readFile(TRAIN_FILE, 'utf8') : '';
    if (current !== text) {
      console.error(`${TRAIN_FILE} is stale: run node --conditions=rft-source --import tsx examples/coding/build-dataset.ts`);
      process.exit(1);
    }
    console.log(`${ids.length} tasks ok, train.jsonl up to date`);
    return;
  }
  await writeFile(TRAIN_FILE, text);
  console.log(`wrote ${ids.length} rows to ${TRAIN_FILE}`);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await main();
