import { z } from 'zod';
import { defineTool } from '../../../src/index.js';

export default defineTool({
  name: 'sandbox_noop',
  description: "Takes the rollout's sandbox and does nothing in it: measures what a rollout's first call pays for its sandbox.",
  parameters: z.object({ q: z.string().optional() }),
  handler: async (_args, ctx) => {
    await ctx.sandbox();
    return 'ok';
  },
});
