// `dataset convert --from harbor DIR`: a folder of Harbor tasks as the rows the Harbor environment
// serves (agent-rft), and through the converters of the trainers whose door runs the rollout.
import { afterAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { readJsonl, removeTempDirs, runCli, tempDir } from '../harness.js';

afterAll(removeTempDirs);

describe('dataset convert --from harbor', () => {
  it('writes the Agent RFT rows: id, the instruction, the harness tools, the task for the sandbox', async () => {
    const out = join(tempDir(), 'rows.jsonl');
    const r = await runCli(['dataset', 'convert', '--from', 'harbor', 'examples/harbor', '--to', 'agent-rft', '--out', out]);
    expect(r.stderr).toMatch(/12 rows converted/);
    expect(r.code).toBe(0);
    const rows = readJsonl<Record<string, unknown>>(out);
    const wg = rows.find((x) => x.id === 'write-greeting')!;
    expect(wg).toMatchObject({ sandbox: { harbor: 'harbor/write-greeting' }, messages: [{ role: 'user', content: expect.stringMatching(/^Create the file `\/app\/greeting\.txt`/) }] });
    expect((wg.tools as { function: { name: string } }[]).map((t) => t.function.name)).toEqual(['shell', 'read_file', 'write_file', 'list_files']);
  });

  it('gives each TRL row its split and index within it, and each Gym row its Responses tools', async () => {
    const trl = await runCli(['dataset', 'convert', '--from', 'harbor', 'examples/harbor', '--to', 'trl']);
    expect(trl.code).toBe(0);
    const rows = trl.stdout.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(rows.map((x) => x.index)).toEqual(rows.map((_, i) => i));
    expect(rows[0]).toMatchObject({ split: 'train', prompt: [{ role: 'user' }], sandbox: { harbor: expect.stringMatching(/^harbor\//) } });
    const gym = await runCli(['dataset', 'convert', '--from', 'harbor', 'examples/harbor', '--to', 'nemo-gym']);
    expect(JSON.parse(gym.stdout.split('\n')[0]!)).toMatchObject({ responses_create_params: { tools: [{ type: 'function', name: 'shell' }, {}, {}, {}] } });
  });

  it('names every invalid task with its code and converts the valid ones', async () => {
    const r = await runCli(['dataset', 'convert', '--from', 'harbor', 'test/fixtures/harbor-invalid', '--to', 'agent-rft']);
    expect(r.code).toBe(0);
    expect(r.stdout.trim().split('\n')).toHaveLength(1);
    for (const code of ['TOML', 'COMPOSE', 'MULTI_STEP', 'FILES']) expect(r.stderr).toContain(`RFT_ERR_HARBOR_TASK_${code}`);
  });

  it("refuses the reward door's trainers: a Harbor task is graded in the rollout's container", async () => {
    const r = await runCli(['dataset', 'convert', '--from', 'harbor', 'examples/harbor', '--to', 'slime']);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/RFT_ERR_CLI_USAGE.*reward door/);
  });
});
