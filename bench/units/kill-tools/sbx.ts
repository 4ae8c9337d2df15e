import { z } from 'zod';
import { defineTool } from '../../../src/index.js';
import { effect } from './_effects.js';

export default defineTool({
  name: 'sbx',
  description: "Appends one line per run to the side-effect file, then runs a command in the rollout's sandbox.",
  parameters: z.object({}),
  async handler(_args, ctx) {
    // Its sandbox first: a rollout whose sandbox a restart lost answers 503 before anything ran.
    const sandbox = await ctx.sandbox();
    const token = effect(ctx.traceId, ctx.callId);
    const r = await sandbox.exec(['sh', '-c', 'echo ok; sleep 0.05'], { timeoutMs: 10_000, signal: ctx.signal });
    return `ran ${token} exit ${r.exitCode}`;
  },
});
