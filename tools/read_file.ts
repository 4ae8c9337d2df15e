// Reads a workspace file as numbered lines, a window at a time, so the model can quote exact lines
// into apply_patch and page through long files.
import { z, defineTool, errors } from 'rft-endpoints';
import { workspacePath } from './_lib/patch/index.js';
import { clipLine, humanBytes, looksBinary } from './_lib/text.js';

const MAX_LINES = 400;
const MAX_CHARS = 24_000;
const MAX_LINE_CHARS = 400;

export default defineTool({
  name: 'read_file',
  // It only reads: a call of it that a server restart cut runs again on the trainer's retry.
  idempotent: true,
  description: `Read a text file of the workspace as numbered lines ("<n>\\t<line>"), at most ${MAX_LINES} lines per call; use start_line / end_line to page.`,
  parameters: z.object({
    path: z.string().min(1).max(1_000).describe('File path relative to the workspace root, e.g. "src/app.py"'),
    start_line: z.number().int().min(1).optional().describe('First line to show, 1-based (default 1)'),
    end_line: z.number().int().min(1).optional().describe(`Last line to show, inclusive (default start_line + ${MAX_LINES - 1})`),
  }),
  async handler(args, ctx) {
    const path = workspacePath(args.path, ctx.item);
    const data = await (await ctx.sandbox()).readFile(path);
    if (looksBinary(data)) return `${path}: binary file (${humanBytes(data.length)}), not shown`;
    const text = data.toString('utf8');
    if (text === '') return `${path}: empty file`;
    const lines = text.split('\n');
    if (lines.at(-1) === '') lines.pop();
    const start = args.start_line ?? 1;
    if (start > lines.length) {
      throw errors.toolInput(`start_line ${start} is past the end of ${path} (${lines.length} lines)`, { lines: lines.length });
    }
    const end = Math.min(args.end_line ?? start + MAX_LINES - 1, start + MAX_LINES - 1, lines.length);
    if (end < start) throw errors.toolInput(`end_line ${args.end_line} is before start_line ${start}`);
    const out: string[] = [];
    let chars = 0;
    let last = start - 1;
    for (let n = start; n <= end; n++) {
      const line = `${n}\t${clipLine((lines[n - 1] as string).replace(/\r$/, ''), MAX_LINE_CHARS)}`;
      if (chars + line.length > MAX_CHARS && out.length > 0) break;
      out.push(line);
      chars += line.length + 1;
      last = n;
    }
    // Say where to go on when the window was cut, not when the model asked for exactly this range.
    const wanted = args.end_line !== undefined ? Math.min(args.end_line, lines.length) : lines.length;
    if (last < wanted) out.push(`[lines ${start}-${last} of ${lines.length}; read on with start_line=${last + 1}]`);
    return out.join('\n');
  },
});
