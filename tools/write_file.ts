// Writes a whole file (creating parent directories); for edits to existing files apply_patch is
// cheaper and safer, but a model sometimes needs to write a new file from scratch.
import { z, defineTool } from 'rft-endpoints';
import { workspacePath } from './_lib/patch/index.js';

export default defineTool({
  name: 'write_file',
  description: 'Create or overwrite a file in the workspace with the given content (parent directories are created).',
  parameters: z.object({
    path: z.string().min(1).max(1_000).describe('File path relative to the workspace root, e.g. "src/util.py"'),
    content: z.string().max(512 * 1024).describe('The complete new content of the file'),
  }),
  serial: true,
  async handler(args, ctx) {
    const path = workspacePath(args.path, ctx.item);
    await (await ctx.sandbox()).writeFile(path, args.content);
    const lines = args.content === '' ? 0 : args.content.split('\n').length - (args.content.endsWith('\n') ? 1 : 0);
    return `wrote ${path} (${Buffer.byteLength(args.content)} bytes, ${lines} lines)`;
  },
});
