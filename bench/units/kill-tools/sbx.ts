import { z } from 'zod';
import { defineTool } from '../../../src/index.js';
import { effect } from './_effects.js';

export default defineTool({
  name: 'sbx',
  description: "Appends one line per run to the side-effect file, then runs a command in the rollout's sandbox.",
  parameters: z.object({}),
  async handler(_args, ctx) {
    const token = effect(ctx.traceId, ctx.callId);
    const r = await (await ctx.sandbox()).exec(['sh', '-c', 'echo ok; sleep 0.05'], { timeoutMs: 10_000, signal: ctx.signal });
    return `ran ${token} exit ${r.exitCode}`;
  },
});
