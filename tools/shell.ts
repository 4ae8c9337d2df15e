// Runs a shell command in the rollout's sandbox. The command's own failure (non-zero exit, timeout)
// is an observation for the model, never a thrown error.
//
// A Harbor row (docs/harbor.md, "The harness") carries its task's `[agent] timeout_sec` as
// `harbor.agent_timeout_sec`: the agent's time, counted from the rollout's first call. A command gets
// at most what is left of it, and one asked for after it ran out is not run: the model is told, and the
// rollout is graded as it stands (Harbor records AgentTimeoutError and still verifies).
import { z, defineTool, type ToolContext } from 'rft-endpoints';
import { workspacePath } from './_lib/patch/index.js';
import { clip } from './_lib/text.js';

const DEFAULT_TIMEOUT_MS = 30_000;
const MAX_TIMEOUT_MS = 120_000;
/** Per stream, after head/tail clipping: enough for a test run's summary and a traceback. */
const STREAM_CHARS = 6_000;

/** What is left of a Harbor row's agent time, in ms (undefined: the row sets none). */
async function agentTimeLeftMs(ctx: ToolContext): Promise<{ limitSec: number; leftMs: number } | undefined> {
  const limitSec = (ctx.item['harbor'] as { agent_timeout_sec?: unknown } | undefined)?.agent_timeout_sec;
  if (typeof limitSec !== 'number' || !(limitSec > 0)) return undefined;
  // The calls before this one, in arrival order: the first started the agent's clock (this one, when there is none).
  const first = (await ctx.rollout.calls())[0]?.startedAt ?? Date.now();
  return { limitSec, leftMs: first + limitSec * 1000 - Date.now() };
}

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
    const time = await agentTimeLeftMs(ctx);
    if (time && time.leftMs <= 0) {
      return `not run: the task's time limit (${time.limitSec} s from the first tool call) has passed; your work is graded as it stands`;
    }
    let timeoutMs = args.timeout_ms ?? DEFAULT_TIMEOUT_MS;
    if (time) timeoutMs = Math.max(100, Math.min(timeoutMs, Math.ceil(time.leftMs)));
    const sandbox = await ctx.sandbox();
    const r = await sandbox.exec(args.command, {
      timeoutMs,
      maxOutputBytes: 64 * 1024,
      signal: ctx.signal,
      ...(cwd !== undefined && cwd !== '.' ? { cwd } : {}),
    });
    const head = [`exit_code: ${r.exitCode ?? 'none'}`];
    if (r.signal) head.push(`signal: ${r.signal}`);
    if (r.timedOut) head.push(`timed_out: true (killed after ${timeoutMs} ms${timeoutMs < (args.timeout_ms ?? DEFAULT_TIMEOUT_MS) ? ": the task's time limit" : ''})`);
    const section = (name: string, text: string, cut: boolean) =>
      text || cut ? [`--- ${name} ---`, clip(text, STREAM_CHARS) + (cut ? '\n[... output cut at 64 KB ...]' : '')] : [];
    return [
      ...head,
      ...section('stdout', r.stdout, r.stdoutTruncated),
      ...section('stderr', r.stderr, r.stderrTruncated),
    ].join('\n');
  },
});
