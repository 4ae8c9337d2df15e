// grep inside the sandbox: regex or fixed string, optional file glob, capped matches. grep runs as
// the sandboxed user, so it sees only what the sandbox sees; the starting path is checked first so a
// symlink planted by an earlier shell call is not followed out of the workspace.
import { posix } from 'node:path';
import { z, defineTool, type Sandbox, errors } from 'rft-endpoints';
import { workspacePath } from './_lib/patch/index.js';
import { clipLine } from './_lib/text.js';

const DEFAULT_RESULTS = 50;
const MAX_RESULTS = 200;
const MAX_LINE_CHARS = 240;

/** The starting path must be a real file or directory of the workspace, not a symlink. */
async function checkStart(sandbox: Sandbox, path: string): Promise<void> {
  if (path === '.') return;
  const parent = posix.dirname(path);
  const entries = await sandbox.listFiles(parent === '.' ? '' : parent, { maxDepth: 1, maxEntries: 100_000 });
  const entry = entries.find((e) => e.path === path);
  if (!entry) throw errors.notFound(`path "${path}"`);
  if (entry.type === 'symlink') throw errors.pathEscape(path);
  if (entry.type !== 'file' && entry.type !== 'dir') throw errors.toolInput(`"${path}" is not a file or directory`);
}

export default defineTool({
  name: 'search',
  // It only reads: a call of it that a server restart cut runs again on the trainer's retry.
  idempotent: true,
  description:
    'Search file contents in the workspace (grep -rn). Returns "path:line:text" for each match. ' +
    'Binary files and .git, node_modules, __pycache__ are skipped.',
  parameters: z.object({
    pattern: z.string().min(1).max(1_000).describe('Extended regular expression (grep -E), or a literal string when fixed_strings is true'),
    fixed_strings: z.boolean().optional().describe('Treat pattern as a literal string (default false)'),
    path: z.string().max(1_000).optional().describe('File or directory to search, relative to the workspace root (default: the root)'),
    glob: z.string().max(200).optional().describe('Only search files whose name matches this glob, e.g. "*.py"'),
    ignore_case: z.boolean().optional().describe('Case-insensitive match (default false)'),
    max_results: z.number().int().min(1).max(MAX_RESULTS).optional().describe(`Maximum matches returned (default ${DEFAULT_RESULTS})`),
  }),
  async handler(args, ctx) {
    const path = workspacePath(args.path ?? '.', ctx.item);
    const sandbox = await ctx.sandbox();
    await checkStart(sandbox, path);
    const argv = [
      'grep', '-rnI', '--color=never',
      '--exclude-dir=.git', '--exclude-dir=node_modules', '--exclude-dir=__pycache__',
      args.fixed_strings ? '-F' : '-E',
      ...(args.ignore_case ? ['-i'] : []),
      ...(args.glob !== undefined ? [`--include=${args.glob}`] : []),
      '-e', args.pattern, '--', path,
    ];
    const r = await sandbox.exec(argv, { timeoutMs: 20_000, maxOutputBytes: 256 * 1024, signal: ctx.signal });
    if (r.exitCode === 1) return 'no matches';
    if (r.exitCode !== 0 && r.stdout === '') {
      throw errors.toolInput(`search failed: ${r.timedOut ? 'timed out' : r.stderr.trim().slice(0, 500)}`);
    }
    const matches = r.stdout.split('\n').filter((l) => l !== '');
    const limit = args.max_results ?? DEFAULT_RESULTS;
    const out = matches.slice(0, limit).map((l) => clipLine(l.replace(/^\.\//, ''), MAX_LINE_CHARS));
    if (matches.length > limit || r.stdoutTruncated) {
      out.push(`[showing ${out.length} of ${r.stdoutTruncated ? 'at least ' : ''}${matches.length} matches; narrow the pattern, path or glob]`);
    }
    return out.join('\n');
  },
});
