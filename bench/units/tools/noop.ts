import { z } from 'zod';
import { defineTool } from '../../../src/index.js';

export default defineTool({
  name: 'noop',
  description: 'Does nothing; measures the pipeline around a tool.',
  parameters: z.object({ q: z.string().optional() }),
  handler: () => 'ok',
});
