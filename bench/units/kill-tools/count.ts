import { z } from 'zod';
import { defineTool } from '../../../src/index.js';
import { effect } from './_effects.js';

export default defineTool({
  name: 'count',
  description: 'Appends one line per run to the side-effect file; answers after delay_ms.',
  parameters: z.object({ delay_ms: z.number().int().min(0).max(5000).default(0) }),
  async handler({ delay_ms }, ctx) {
    const token = effect(ctx.traceId, ctx.callId);
    if (delay_ms > 0) await new Promise((r) => setTimeout(r, delay_ms));
    return `ran ${token}`;
  },
});
