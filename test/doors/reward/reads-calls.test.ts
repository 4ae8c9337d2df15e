// A grader that reads the rollout's tool calls declares it (readsCalls; undeclared, its file's `.calls(` says
// so), and the reward door, whose samples carry no tool calls, refuses it with a coded error: never a score
// computed on an empty trajectory (a right answer scored 0.8 there, "no lookup"). Agent RFT's /graders still
// serves it; `readsCalls: false` is the grader's own word that it grades a rollout without calls.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadRegistry, sourceReadsCalls } from '../../../src/registry/loader.js';
import { repoRoot, startTestServer, type TestServer } from '../../helpers/server.js';

const grader = (name: string, readsCalls: boolean | undefined) => `import { defineGrader } from '${join(repoRoot, 'src/index.ts')}';
export default defineGrader({
  name: '${name}',
  description: 'right answer, full marks only after a lookup',
  ${readsCalls === undefined ? '// readsCalls not declared' : `readsCalls: ${readsCalls},`}
  async handler({ sample, item }, ctx) {
    const right = (sample.output_text ?? '').includes(String(item.reference_answer)) ? 1 : 0;
    const looked = (await ctx.rollout.calls()).some((c) => c.tool === 'lookup');
    return right * (looked ? 1 : 0.8);
  },
});
`;

describe('graders that read tool calls, through the reward door', () => {
  let server: TestServer;
  let door: string;
  beforeAll(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rft-reads-calls-'));
    writeFileSync(join(dir, 'declared.ts'), grader('declared', true));
    writeFileSync(join(dir, 'undeclared.ts'), grader('undeclared', undefined));
    writeFileSync(join(dir, 'opted_out.ts'), grader('opted_out', false));
    server = await startTestServer({ gradersDir: dir, env: { RFT_PRIVATE_PORT: '0', RFT_SQLITE_SYNC: 'normal' } });
    door = server.app.rft.privateDoors!.url;
  });
  afterAll(() => server?.close());

  const reward = async (name: string) => {
    const res = await fetch(`${door}/reward/${name}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ prompt: 'q', response: 'Answer: 42', label: '42' }) });
    return { status: res.status, body: (await res.json()) as unknown };
  };

  it('refuses a grader declaring readsCalls (RFT_ERR_GRADER_READS_CALLS), grading and recording nothing', async () => {
    const before = await server.app.rft.store.listRollouts({ limit: 1000, filter: { door: 'reward' } });
    const r = await reward('declared');
    expect(r.status).toBe(404);
    expect(r.body).toMatchObject({ error: { code: 'RFT_ERR_GRADER_READS_CALLS', details: { grader: 'declared', door: 'reward' } } });
    const after = await server.app.rft.store.listRollouts({ limit: 1000, filter: { door: 'reward' } });
    expect(after.rollouts.length).toBe(before.rollouts.length);
    // Undeclared, the grader's file says it: refused the same.
    expect(await reward('undeclared')).toMatchObject({ status: 404, body: { error: { code: 'RFT_ERR_GRADER_READS_CALLS' } } });
    const after2 = await server.app.rft.store.listRollouts({ limit: 1000, filter: { door: 'reward' } });
    expect(after2.rollouts.length).toBe(before.rollouts.length);
    // What it would be graded there, once the grader says it handles no calls: the right answer, no lookup.
    expect(await reward('opted_out')).toEqual({ status: 200, body: 0.8 });
  });

  it('infers readsCalls from code, not from comments', () => {
    expect(sourceReadsCalls('const calls = await ctx.rollout.calls();')).toBe(true);
    expect(sourceReadsCalls('const c = await ctx.rollout\n  .calls ();')).toBe(true);
    expect(sourceReadsCalls('// ctx.rollout.calls() is not read here\n/* nor .calls( here */ const url = "http://x"; return 1;')).toBe(false);
    expect(sourceReadsCalls('const b = await ctx.rollout.budget();')).toBe(false);
  });

  it('still serves it on Agent RFT /graders, where the rollout has its calls', async () => {
    const res = await fetch(`${server.url}/graders/declared`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${server.key}` },
      body: JSON.stringify({ sample: { output_text: '42', output_tools: [], choices: [] }, item: { reference_answer: '42' }, trace_id: 'trace_reads_calls' }),
    });
    expect(res.status).toBe(200);
  });

  it('the shipped unit_tests grader (it checks the calls\' sandboxes) declares readsCalls; a non-boolean is refused at load', async () => {
    const reg = await loadRegistry({ toolsDir: join(repoRoot, 'no-tools'), gradersDir: join(repoRoot, 'graders') });
    expect(reg.graders.get('unit_tests')?.def.readsCalls).toBe(true);
    expect([...reg.graders.values()].filter((g) => g.readsCalls).map((g) => g.def.name)).toEqual(['unit_tests']);
    const dir = mkdtempSync(join(tmpdir(), 'rft-reads-calls-bad-'));
    writeFileSync(join(dir, 'bad.ts'), grader('bad', undefined).replace("description:", "readsCalls: 'yes',\n  description:"));
    await expect(loadRegistry({ toolsDir: join(dir, 'none'), gradersDir: dir })).rejects.toMatchObject({ code: 'RFT_ERR_UNIT_LOAD', message: expect.stringMatching(/readsCalls must be true or false/) });
  });
});
