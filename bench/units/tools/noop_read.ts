import { z } from 'zod';
import { defineTool } from '../../../src/index.js';

export default defineTool({
  name: 'noop_read',
  description: 'Does nothing, declared read-only: measures the pipeline for search/read tools.',
  parameters: z.object({ q: z.string().optional() }),
  readOnly: true,
  handler: () => 'ok',
});
