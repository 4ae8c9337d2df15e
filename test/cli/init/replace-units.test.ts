// What the blank example's README asks: replace its tool and grader with your own. The project's
// job.json used to name lookup_price and price_match, so after the swap the server left the project's
// environment out: ORS listed none, OpenEnv's reset answered RFT_ERR_UNKNOWN_ENVIRONMENT, and nothing
// pointed at job.json. Now init's job.json names no unit, so the new ones are served on every door.
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { initProject } from '../../../src/cli/init/project.js';
import { startTestServer, type TestServer } from '../../helpers/server.js';
import { OrsClient } from '../../helpers/ors-client.js';
import { waitFor } from '../../helpers/wait.js';
import { EnvClient } from '../../helpers/openenv-client.js';
import { reexport, removeTempDirs, repoRoot, runCli, tempDir } from '../harness.js';

const servers: TestServer[] = [];
afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()));
  removeTempDirs();
});

describe('a blank project whose tool and grader were replaced', () => {
  it('serves the new tool on ORS and OpenEnv, and its README says which files to change', async () => {
    const dir = join(tempDir('rft-replace-'), 'price-bot');
    initProject({ dir, example: 'blank', packageSpec: `file:${repoRoot}` });
    rmSync(join(dir, 'tools/lookup_price.ts'));
    rmSync(join(dir, 'graders/price_match.ts'));
    writeFileSync(join(dir, 'tools/echo.ts'), reexport('test/fixtures/units/tools/echo.ts'));
    writeFileSync(join(dir, 'graders/exact.ts'), reexport('test/fixtures/units/graders/exact.ts'));

    const readme = readFileSync(join(dir, 'README.md'), 'utf8');
    expect(readme).toContain('It names no tool or grader');
    expect(readme).toContain('RFT_ERR_JOB_UNITS');
    expect(readme).toContain('`hard.jsonl` is split `hard`');

    const server = await startTestServer({
      toolsDir: join(dir, 'tools'),
      gradersDir: join(dir, 'graders'),
      env: { RFT_ENVIRONMENTS: dir, RFT_PRIVATE_PORT: '0', RFT_SQLITE_SYNC: 'normal' },
    });
    servers.push(server);
    const ors = new OrsClient(server.url, { token: server.key, waitScale: 0.01 });
    expect(await ors.request('GET', '/list_environments')).toEqual(['price-bot']);
    expect(await ors.request('GET', '/price-bot/tools')).toMatchObject({ tools: [{ name: 'echo' }, { name: 'submit' }] });

    const env = await new EnvClient(`${server.app.rft.privateDoors!.url}/price-bot`).connect();
    try {
      // The example's rows still offer lookup_price: a coded error naming it, until they are regenerated.
      await expect(env.reset({ split: 'train', index: 0 })).rejects.toMatchObject({ data: { code: 'RFT_ERR_BAD_REQUEST', message: expect.stringContaining('lookup_price') } });
      const tools = (await (await fetch(`${server.url}/v1/tools`, { headers: { authorization: `Bearer ${server.key}` } })).json()) as { tools: unknown[] };
      writeFileSync(join(dir, 'train.jsonl'), `${JSON.stringify({ messages: [{ role: 'user', content: 'Say hi.' }], tools: tools.tools, reference_answer: 'hi' })}\n`);
      // Served without a restart once the file settles (a file younger than SETTLE_MS may be mid-write).
      const reset = await waitFor('the regenerated rows to be served', () => env.reset({ split: 'train', index: 0 }).catch(() => undefined), 20_000);
      expect(reset.done).toBe(false);
      expect(await env.callTool('echo', { text: 'hi' })).toBe('hi');
    } finally {
      await env.close();
    }
  }, 60_000);

  it('`serve` on a project whose job.json still names the old tool exits 2 with RFT_ERR_JOB_UNITS, naming job.json and the tool', async () => {
    const dir = join(tempDir('rft-replace-'), 'stale');
    initProject({ dir, example: 'blank', packageSpec: `file:${repoRoot}` });
    rmSync(join(dir, 'tools/lookup_price.ts'));
    rmSync(join(dir, 'graders/price_match.ts'));
    writeFileSync(join(dir, 'tools/echo.ts'), reexport('test/fixtures/units/tools/echo.ts'));
    writeFileSync(join(dir, 'graders/exact.ts'), reexport('test/fixtures/units/graders/exact.ts'));
    // The user names units in job.json again, the old tool among them.
    const job = JSON.parse(readFileSync(join(dir, 'job.json'), 'utf8')) as { method: { reinforcement: Record<string, unknown> } };
    job.method.reinforcement.tools = [{ name: 'lookup_price', server_url: 'https://YOUR-HOST/tools' }];
    writeFileSync(join(dir, 'job.json'), JSON.stringify(job));
    const r = await runCli(['serve'], {
      RFT_TOOLS_DIR: join(dir, 'tools'),
      RFT_GRADERS_DIR: join(dir, 'graders'),
      RFT_ENVIRONMENTS: dir,
      RFT_DATA_DIR: join(dir, 'data'),
      RFT_SANDBOX: 'none',
      PORT: '0',
      HOST: '127.0.0.1',
    });
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toContain('RFT_ERR_JOB_UNITS');
    expect(r.stderr).toContain(join(dir, 'job.json'));
    expect(r.stderr).toContain('"lookup_price"');
  }, 60_000);
});
