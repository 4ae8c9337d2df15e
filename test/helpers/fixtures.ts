// Fixture units (test/fixtures/units) and small request builders shared by the core tests.
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { repoRoot, startTestServer, type TestServer, type TestServerOptions } from './server.js';

export const fixtureTools = join(repoRoot, 'test/fixtures/units/tools');
export const fixtureGraders = join(repoRoot, 'test/fixtures/units/graders');

export function startFixtureServer(opts: TestServerOptions = {}): Promise<TestServer> {
  return startTestServer({ toolsDir: fixtureTools, gradersDir: fixtureGraders, ...opts });
}

export const newTrace = () => `trace_${randomUUID()}`;

export function functionCall(name: string, args: unknown, over: Record<string, unknown> = {}) {
  const callId = `call_${randomUUID().slice(0, 8)}`;
  return {
    type: 'function_call',
    id: `fc_${callId}`,
    call_id: callId,
    name,
    arguments: typeof args === 'string' ? args : JSON.stringify(args),
    trace_id: newTrace(),
    item: {},
    ...over,
  };
}

export const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

/** A `multi` grader config (exact match and fuzzy match, half each), as a JSON grader file would hold it. */
export const comboGraderConfig = {
  type: 'multi',
  name: 'combo',
  graders: {
    exact: { type: 'string_check', name: 'exact', input: '{{sample.output_text}}', reference: '{{item.reference_answer}}', operation: 'eq' },
    fuzzy: { type: 'text_similarity', name: 'fuzzy', input: '{{sample.output_text}}', reference: '{{item.reference_answer}}', evaluation_metric: 'fuzzy_match' },
  },
  calculate_output: '0.5 * exact + 0.5 * fuzzy',
};
