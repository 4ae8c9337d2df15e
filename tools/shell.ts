// Runs a shell command in the rollout's sandbox. The command's own failure (non-zero exit, timeout)
// is an observation for the model, never a thrown error.
import { z, defineTool } from 'rft-endpoints';
import { workspacePath } from './_lib/patch/index.js';
import { clip } from './_lib/text.js';

const DEFAULT_TIMEOUT_MS = 30_000;
const MAX_TIMEOUT_MS = 120_000;
/** Per stream, after head/tail clipping: enough for a test run's summary and a traceback. */
const STREAM_CHARS = 6_000;

export default defineTool({
  name: 'shell',
  description:
    'Run a shell command (sh -c) in the workspace, e.g. to run tests or inspect files. ' +
    'Returns the exit code, stdout and stderr (long output is cut in the middle) and whether it timed out.',
  parameters: z.object({
    command: z.string().min(1).max(20_000).describe('The command line, run with sh -c; e.g. "python3 -m unittest -q"'),
    timeout_ms: z
      .number()
      .int()
      .min(100)
      .max(MAX_TIMEOUT_MS)
      .optional()
      .describe(`Wall-clock limit in milliseconds (default ${DEFAULT_TIMEOUT_MS}, at most ${MAX_TIMEOUT_MS})`),
    workdir: z.string().max(1_000).optional().describe('Directory to run in, relative to the workspace root (default: the root)'),
  }),
  serial: true,
  timeoutMs: MAX_TIMEOUT_MS + 15_000,
  async handler(args, ctx) {
    const cwd = args.workdir !== undefined ? workspacePath(args.workdir, ctx.item) : undefined;
    const sandbox = await ctx.sandbox();
    const r = await sandbox.exec(args.command, {
      timeoutMs: args.timeout_ms ?? DEFAULT_TIMEOUT_MS,
      maxOutputBytes: 64 * 1024,
      signal: ctx.signal,
      ...(cwd !== undefined && cwd !== '.' ? { cwd } : {}),
    });
    const head = [`exit_code: ${r.exitCode ?? 'none'}`];
    if (r.signal) head.push(`signal: ${r.signal}`);
    if (r.timedOut) head.push(`timed_out: true (killed after ${args.timeout_ms ?? DEFAULT_TIMEOUT_MS} ms)`);
    const section = (name: string, text: string, cut: boolean) =>
      text || cut ? [`--- ${name} ---`, clip(text, STREAM_CHARS) + (cut ? '\n[... output cut at 64 KB ...]' : '')] : [];
    return [
      ...head,
      ...section('stdout', r.stdout, r.stdoutTruncated),
      ...section('stderr', r.stderr, r.stderrTruncated),
    ].join('\n');
  },
});
