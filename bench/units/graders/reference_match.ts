import { defineGrader } from '../../../src/index.js';

// The grade path's own cost: only compares the answer with the row's reference (bench/grade-path.ts;
// bench/fastapi_grader.py does the same comparison).
export default defineGrader({
  name: 'reference_match',
  description: "1 if the answer is the row's reference answer, else 0.",
  handler: ({ sample, item }) => ((sample.output_text ?? '').trim() === String(item.reference_answer ?? '').trim() ? 1 : 0),
});
