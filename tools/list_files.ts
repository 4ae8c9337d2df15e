// Lists a workspace directory, recursively to a depth, with an entry cap so a huge tree does not
// flood the model.
import { z, defineTool } from 'rft-endpoints';
import { workspacePath } from './_lib/patch/index.js';
import { humanBytes } from './_lib/text.js';

const MAX_ENTRIES = 300;
/** After an entry whose name is not UTF-8: its path is shown, but cannot be passed back as is. */
const NOT_UTF8 = '[name not UTF-8: bytes shown as \\xNN; reach it with shell]';
/** Generated or vendored trees: listed as one line, never walked into in the output. */
const NOISE = new Set(['.git', 'node_modules', '__pycache__', '.pytest_cache', '.mypy_cache', '.venv']);

export default defineTool({
  name: 'list_files',
  // It only reads: a call of it that a server restart cut runs again on the trainer's retry.
  idempotent: true,
  description: `List files and directories under a workspace path (directories end with "/"), recursively up to a depth, at most ${MAX_ENTRIES} entries.`,
  parameters: z.object({
    path: z.string().max(1_000).optional().describe('Directory relative to the workspace root (default: the root)'),
    depth: z.number().int().min(1).max(8).optional().describe('How many levels to descend (default 3; 1 lists only the directory itself)'),
  }),
  async handler(args, ctx) {
    const path = workspacePath(args.path ?? '.', ctx.item);
    const entries = await (await ctx.sandbox()).listFiles(path === '.' ? '' : path, {
      maxDepth: args.depth ?? 3,
      maxEntries: MAX_ENTRIES * 2,
    });
    const shown = entries.filter((e) => !e.path.split('/').slice(0, -1).some((part) => NOISE.has(part)));
    if (shown.length === 0) return `${path}: empty directory`;
    const lines = shown.slice(0, MAX_ENTRIES).map((e) => {
      const mark = e.escaped ? ` ${NOT_UTF8}` : '';
      if (e.type === 'dir') return `${e.path}/${mark}`;
      if (e.type === 'symlink') return `${e.path} (symlink)${mark}`;
      return `${e.path} (${humanBytes(e.size)})${mark}`;
    });
    if (shown.length > MAX_ENTRIES || entries.length >= MAX_ENTRIES * 2) {
      lines.push(`[listing stopped at ${MAX_ENTRIES} entries; list a subdirectory or use a smaller depth]`);
    }
    return lines.join('\n');
  },
});
