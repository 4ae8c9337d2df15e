// The record's JSON on import: a sample of any depth gets its hash (canonicalJson has a stack of its own);
// what the main listener's depth check lets through is all an import can carry.
import { expect, it } from 'vitest';
import { rolloutFromJson } from '../../src/protocol/record-json.js';
import { canonicalJson, sha256 } from '../../src/protocol/canonical.js';

const at = new Date(0).toISOString();
const record = (sample: unknown) => ({
  trace_id: 'trace_deep',
  created_at: at,
  updated_at: at,
  item: { reference_answer: '1' },
  budget: { used: 0, limit: 10, exceeded: false },
  calls: [],
  grades: [{ grader: 'g', grader_version: 'v', sample, score: 0, subscores: null, explanation: null, status: 'ok', error: null, source: 'endpoint', created_at: at, duration_ms: 1 }],
});

it("hashes an imported grade's sample at any depth, as the grading service hashed it", () => {
  const text = '['.repeat(200_000) + ']'.repeat(200_000);
  const sample = { output_text: text, output_json: JSON.parse(text) as unknown };
  const r = rolloutFromJson(record(sample), 'line 1');
  expect(r.grades[0]!.sampleHash).toBe(sha256(canonicalJson(sample)));
  expect(r.grades[0]!.sampleHash).toBe(sha256(`{"output_json":${text},"output_text":${JSON.stringify(text)}}`));
});
