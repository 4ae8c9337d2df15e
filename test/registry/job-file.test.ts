// The project's job.json decides what the job fragment and the job body say (model, max_episode_steps,
// hyperparameters, the grader's rate_limit and pass_threshold): /v1/job-config used to answer
// max_episode_steps 10 whatever job.json said, and nothing built the whole job request.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, fixtureGraders, fixtureTools } from '../helpers/fixtures.js';
import { repoRoot, startTestServer, type TestServer } from '../helpers/server.js';
import { reexport, removeTempDirs, runCli, tempDir } from '../cli/harness.js';

const blankJob = join(repoRoot, 'examples/blank/job.json');
const blank = JSON.parse(readFileSync(blankJob, 'utf8'));
const base = 'https://rft.example.com';

/** A project folder as `init` lays it out: tools/ with job.json beside it. */
function project(job: string | undefined): string {
  const dir = tempDir('rft-job-');
  mkdirSync(join(dir, 'tools'));
  writeFileSync(join(dir, 'tools/echo.ts'), reexport('test/fixtures/units/tools/echo.ts'));
  if (job !== undefined) writeFileSync(join(dir, 'job.json'), job);
  return join(dir, 'tools');
}

const servers: TestServer[] = [];
const start = async (toolsDir: string, env: Record<string, string> = {}) => {
  const s = await startTestServer({ toolsDir, gradersDir: fixtureGraders, env: { RFT_DEFAULT_GRADER: 'exact', ...env } });
  servers.push(s);
  return s;
};
const get = async (s: TestServer, url: string) => (await s.app.inject({ method: 'GET', url, headers: bearer(s.key) })).json();
afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()));
  removeTempDirs();
});

describe("the project's job.json", () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await start(project(readFileSync(blankJob, 'utf8')));
  });

  it('gives /v1/job-config its max_episode_steps, hyperparameters and grader settings', async () => {
    const frag = await get(s, `/v1/job-config?base_url=${base}`);
    expect(frag.max_episode_steps).toBe(6);
    expect(frag.hyperparameters).toEqual(blank.method.reinforcement.hyperparameters);
    expect(frag.grader).toMatchObject({ name: 'exact', url: `${base}/graders/exact`, rate_limit: 50, pass_threshold: 0.5 });
    expect(frag.tools).toEqual([{ name: 'echo', server_url: `${base}/tools`, headers: { Authorization: 'Bearer <YOUR_RFT_KEY>' } }]);
  });

  it("answers the whole job request for OpenAI and Azure: job.json's body with this server's tools and grader, the files' ids as placeholders", async () => {
    const { openai, azure } = await get(s, `/v1/job-body?base_url=${base}`);
    const frag = await get(s, `/v1/job-config?base_url=${base}`);
    expect(openai).toMatchObject({ method: 'POST', url: 'https://api.openai.com/v1/fine_tuning/jobs', headers: { Authorization: 'Bearer <OPENAI_API_KEY>' } });
    expect(openai.body).toEqual({
      model: 'o4-mini-2025-04-16',
      training_file: '<TRAINING_FILE_ID>',
      validation_file: '<VALIDATION_FILE_ID>',
      suffix: 'prices',
      method: { type: 'reinforcement', reinforcement: frag },
    });
    expect(azure.url).toMatch(/^https:\/\/<YOUR-RESOURCE>\.openai\.azure\.com\/openai\/v1\/fine_tuning\/jobs$/);
    expect(azure.headers).toMatchObject({ 'api-key': '<AZURE_OPENAI_API_KEY>' });
    expect(azure.body).toEqual(openai.body);
  });

  it('`rft-endpoints job body` prints both requests', async () => {
    const json = await runCli(['job', 'body', '--server', s.url, '--key', s.key, '--base-url', base, '--json']);
    expect(json.code, json.stderr).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual(await get(s, `/v1/job-body?base_url=${base}`));
    const text = await runCli(['job', 'body', '--server', s.url, '--key', s.key, '--base-url', base]);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toContain('POST https://api.openai.com/v1/fine_tuning/jobs\nAuthorization: Bearer <OPENAI_API_KEY>\n');
    expect(text.stdout).toContain('POST https://<YOUR-RESOURCE>.openai.azure.com/openai/v1/fine_tuning/jobs\napi-key: <AZURE_OPENAI_API_KEY>\n');
    expect(text.stdout).toContain('"max_episode_steps": 6');
    const one = await runCli(['job', 'body', '--server', s.url, '--key', s.key, '--for', 'azure', '--json']);
    expect(Object.keys(JSON.parse(one.stdout))).toEqual(['azure']);
  }, 60_000);
});

describe('without a job.json', () => {
  it("answers the README's defaults: 10 steps, o4-mini, both files", async () => {
    const s = await start(fixtureTools);
    expect((await get(s, '/v1/job-config')).max_episode_steps).toBe(10);
    expect((await get(s, '/v1/job-config')).hyperparameters).toBeUndefined();
    const { body } = (await get(s, '/v1/job-body')).openai;
    expect(body).toMatchObject({ model: 'o4-mini-2025-04-16', training_file: '<TRAINING_FILE_ID>', validation_file: '<VALIDATION_FILE_ID>' });
  });
});

describe('several graders and no default', () => {
  it('the job body is the same coded error as the job-config, never a body without a grader', async () => {
    const s = await start(project(readFileSync(blankJob, 'utf8')), { RFT_DEFAULT_GRADER: '' });
    expect((await get(s, `/v1/job-body?base_url=${base}`)).error.code).toBe('RFT_ERR_NO_DEFAULT_GRADER');
  });
});

describe('RFT_JOB_FILE', () => {
  it('names the file (a missing one stops the boot); a job.json that is not a job body stops it too', async () => {
    const s = await start(fixtureTools, { RFT_JOB_FILE: blankJob });
    expect((await get(s, '/v1/job-config')).max_episode_steps).toBe(6);
    await expect(start(fixtureTools, { RFT_JOB_FILE: join(tempDir(), 'nope.json') })).rejects.toMatchObject({ code: 'RFT_ERR_CONFIG' });
    const bad = project(JSON.stringify({ method: { reinforcement: { max_episode_steps: 'six' } } }));
    await expect(start(bad)).rejects.toMatchObject({ code: 'RFT_ERR_CONFIG' });
  });
});
