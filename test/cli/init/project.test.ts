// A project of one's own: `init`, `npm install`, `npm start`, a tool call, in a temporary folder;
// and the compiled package (`npm run build`, `npm pack`) serving units with plain `node`.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { spawnServer, type ChildServer } from '../../helpers/child-server.js';
import { freePort } from '../../helpers/containers.js';
import { waitFor } from '../../helpers/wait.js';
import { getJson, removeTempDirs, repoRoot, runCli, tempDir } from '../harness.js';

const npm = (args: string[], cwd: string) =>
  spawnSync('npm', [...args, '--no-audit', '--no-fund', '--loglevel=error'], { cwd, encoding: 'utf8', env: { ...process.env, npm_config_update_notifier: 'false' }, timeout: 300_000 });

const toolNames = async (s: { url: string; key: string }) =>
  (await getJson<{ tools: { function: { name: string } }[] }>(s, '/v1/tools')).tools.map((t) => t.function.name).sort();

async function callTool(s: { url: string; key: string }, name: string, args: unknown): Promise<string> {
  const res = await fetch(`${s.url}/tools`, {
    method: 'POST',
    headers: { authorization: `Bearer ${s.key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ type: 'function_call', call_id: 'call_1', name, arguments: JSON.stringify(args), trace_id: 'trace_project', item: {} }),
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { output: string }).output;
}

const keyOf = (dataDir: string) => readFileSync(join(dataDir, 'api-key'), 'utf8').trim();

/**
 * nemo-gym.yaml as ng_run reads it (trainer-doors.md §1, Gym's cli/env.py): the resources server entry
 * at the door's address with a stub entrypoint ng_run can start from resources_servers/rft/, Gym's
 * simple_agent wired to it and to a model server; the README runs ng_run and ng_collect_rollouts on it.
 */
function expectNemoGymConfig(dir: string): void {
  const config = parseYaml(readFileSync(join(dir, 'nemo-gym.yaml'), 'utf8')) as Record<string, Record<string, Record<string, Record<string, unknown>>>>;
  expect(Object.keys(config)).toEqual(['rft_env', 'rft_agent', 'policy_model']);
  expect(config.rft_env!.resources_servers).toEqual({
    rft: { entrypoint: 'app.py', domain: 'agent', verified: false, description: expect.any(String), host: '127.0.0.1', port: 8788 },
  });
  expect(config.rft_agent!.responses_api_agents).toEqual({
    simple_agent: {
      entrypoint: 'app.py',
      max_steps: 10, // the job's max_episode_steps
      resources_server: { type: 'resources_servers', name: 'rft_env' },
      model_server: { type: 'responses_api_models', name: 'policy_model' },
    },
  });
  expect(config.policy_model!.responses_api_models).toEqual({
    openai_model: { entrypoint: 'app.py', openai_base_url: 'http://127.0.0.1:8000/v1', openai_api_key: 'EMPTY', openai_model: 'policy' },
  });
  expect(readdirSync(join(dir, 'resources_servers/rft')).sort()).toEqual(['app.py', 'requirements.txt']);
  const compiled = spawnSync('python3', ['-m', 'py_compile', join(dir, 'resources_servers/rft/app.py')], { encoding: 'utf8' });
  expect(compiled.status, compiled.stderr).toBe(0);
  const readme = readFileSync(join(dir, 'README.md'), 'utf8');
  expect(readme).toContain('RFT_NEMO_GYM_PORT=8788 npm start');
  expect(readme).toContain('dataset convert train.jsonl --to nemo-gym --out train.gym.jsonl');
  expect(readme).toContain('ng_run "+config_paths=[nemo-gym.yaml]"');
  expect(readme).toContain('ng_collect_rollouts +agent_name=rft_agent +input_jsonl_fpath=train.gym.jsonl');
}

const servers: ChildServer[] = [];
afterAll(async () => {
  await Promise.all(servers.map((s) => s.stop()));
  removeTempDirs();
});

describe('rft-endpoints init', () => {
  it('makes a finqa project that npm install (offline) and npm start turn into a server of only its own tools', async () => {
    const dir = join(tempDir('rft-project-'), 'research');
    const init = await runCli(['init', dir, '--example', 'finqa']);
    expect(init.code, init.stderr).toBe(0);
    expect(readdirSync(dir).sort()).toEqual([
      '.gitignore', 'README.md', 'examples', 'graders', 'job.json', 'nemo-gym.yaml', 'package.json', 'resources_servers', 'scripted.jsonl', 'tools', 'train.jsonl', 'tsconfig.json', 'valid.jsonl',
    ]);
    expectNemoGymConfig(dir);
    const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { dependencies: Record<string, string>; scripts: Record<string, string> };
    // From a checkout the project links this copy; its only dependency, so no registry is needed.
    expect(pkg.dependencies).toEqual({ 'rft-endpoints': `file:${repoRoot}` });
    expect(readFileSync(join(dir, 'tools/search_docs.ts'), 'utf8')).toContain("from 'rft-endpoints'");

    const install = npm(['install', '--offline'], dir);
    expect(install.status, install.stderr).toBe(0);
    const server = await spawnServer({ RFT_DATA_DIR: join(dir, 'data') }, { command: ['npm', 'start', '--silent'], cwd: dir, timeoutMs: 90_000 });
    servers.push(server);
    const s = { url: server.url, key: keyOf(join(dir, 'data')) };
    expect(await toolNames(s)).toEqual(['list_docs', 'read_doc', 'search_docs']);
    const job = await getJson<{ tools: { name: string }[]; grader: { name: string } }>(s, '/v1/job-config');
    expect(job.tools.map((t) => t.name).sort()).toEqual(['list_docs', 'read_doc', 'search_docs']);
    expect(job.grader.name).toBe('answer_match');
    const out = JSON.parse(await callTool(s, 'search_docs', { query: 'Kestrel Line contract worth', top_k: 1 })) as { results: { doc_id: string }[] };
    expect(out.results[0]?.doc_id).toBe('halvorsen-earnings-call-q2-2025');
    // The project's dataset passes the check against the project's own units.
    const check = spawnSync(process.execPath, [join(dir, 'node_modules/.bin/rft-endpoints'), 'dataset', 'check', 'train.jsonl'], { cwd: dir, encoding: 'utf8', timeout: 120_000 });
    expect(check.stdout, check.stderr).toMatch(/train\.jsonl: 26 rows, 26 ok, 0 with problems; 0 problems/);
    expect(check.status).toBe(0);

    // `npm run dev` restarts the server when a tool file changes: a new tool is served without a restart by hand.
    const port = await freePort();
    const dev = await spawnServer({ RFT_DATA_DIR: join(dir, 'data-dev'), PORT: String(port) }, { command: ['npm', 'run', 'dev', '--silent'], cwd: dir, timeoutMs: 90_000 });
    servers.push(dev);
    const d = { url: dev.url, key: keyOf(join(dir, 'data-dev')) };
    expect(await toolNames(d)).toEqual(['list_docs', 'read_doc', 'search_docs']);
    writeFileSync(
      join(dir, 'tools/echo_back.ts'),
      "import { z, defineTool } from 'rft-endpoints';\nexport default defineTool({ name: 'echo_back', description: 'Echo.', parameters: z.object({ text: z.string() }), async handler({ text }) { return text; } });\n",
    );
    await waitFor('the dev server to serve the new tool', async () => ((await toolNames(d).catch((): string[] => [])).includes('echo_back') ? true : undefined), 90_000);
    expect(await callTool(d, 'echo_back', { text: 'hi' })).toBe('hi');
  }, 300_000);

  it("names the job after the project (job.json's suffix is the folder's name, not the example's) and names none of the example's units", async () => {
    const dir = join(tempDir('rft-project-'), 'Price Bot');
    const init = await runCli(['init', dir, '--example', 'blank']);
    expect(init.code, init.stderr).toBe(0);
    const example = JSON.parse(readFileSync(join(repoRoot, 'examples/blank/job.json'), 'utf8')) as { suffix: string; method: { reinforcement: Record<string, unknown> } };
    expect(example.suffix).toBe('prices');
    // The server serves tools/ and graders/ and `job body` names them: a stale name here would stop the boot.
    const { tools: _tools, grader, ...reinforcement } = example.method.reinforcement as { tools: unknown; grader: Record<string, unknown> };
    const { name: _name, url: _url, headers: _headers, ...settings } = grader;
    expect(JSON.parse(readFileSync(join(dir, 'job.json'), 'utf8'))).toEqual({ ...example, suffix: 'price-bot', method: { ...example.method, reinforcement: { ...reinforcement, grader: settings } } });
  }, 60_000);

  it('refuses a folder that is not empty, leaving it as it was (exit 2, RFT_ERR_INIT_TARGET)', async () => {
    const dir = tempDir('rft-project-');
    writeFileSync(join(dir, 'notes.txt'), 'mine');
    const r = await runCli(['init', dir]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^error RFT_ERR_INIT_TARGET: cannot create a project in .*: the folder is not empty\n$/);
    expect(readdirSync(dir)).toEqual(['notes.txt']);
  }, 60_000);
});

describe('the compiled package', () => {
  let tarball: string;
  beforeAll(() => {
    // `npm run build` is what `npm pack` (prepack) and the Docker image run.
    execFileSync('npm', ['run', 'build', '--silent'], { cwd: repoRoot, stdio: 'pipe', timeout: 600_000 });
    const dest = tempDir('rft-pack-');
    execFileSync('npm', ['pack', '--ignore-scripts', '--silent', '--pack-destination', dest], { cwd: repoRoot, stdio: 'pipe', timeout: 120_000 });
    tarball = join(dest, readdirSync(dest).find((f) => f.endsWith('.tgz'))!);
  }, 660_000);

  it('serves the shipped units with node dist/src/cli/main.js (assets copied: finqa documents, grader JSON, runner.py)', async () => {
    const data = tempDir('rft-dist-');
    const server = await spawnServer(
      { RFT_DATA_DIR: data },
      { command: [process.execPath, join(repoRoot, 'dist/src/cli/main.js'), 'serve', '--tools', join(repoRoot, 'dist/tools'), '--graders', join(repoRoot, 'dist/graders')], timeoutMs: 60_000 },
    );
    servers.push(server);
    const s = { url: server.url, key: keyOf(data) };
    expect(await toolNames(s)).toEqual(['apply_patch', 'list_docs', 'list_files', 'read_doc', 'read_file', 'search', 'search_docs', 'shell', 'write_file']);
    // the shipped graders' three, and the built-in harbor grader: examples/harbor (a Harbor environment) is served too
    expect(server.stderr()).toMatch(/listening on .* \(9 tools, 4 graders/);
    const out = JSON.parse(await callTool(s, 'list_docs', { prefix: 'halvorsen' })) as { count: number };
    expect(out.count).toBe(4);
    expect(existsSync(join(repoRoot, 'dist/graders/_unit_tests/runner.py'))).toBe(true);
  }, 120_000);

  it('installed from its npm pack tarball, runs a blank project on dist/ (TypeScript units through tsx)', async () => {
    const dir = join(tempDir('rft-project-'), 'shop');
    const init = await runCli(['init', dir, '--example', 'blank', '--package', tarball]);
    expect(init.code, init.stderr).toBe(0);
    expect(JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')).dependencies).toEqual({ 'rft-endpoints': tarball });
    // What `npm install` makes of the tarball, without the registry (tests never leave loopback):
    // the package unpacked in node_modules, its own dependencies taken from this checkout's.
    const installed = join(dir, 'node_modules/rft-endpoints');
    mkdirSync(installed, { recursive: true });
    execFileSync('tar', ['xzf', tarball, '-C', installed, '--strip-components=1']);
    symlinkSync(join(repoRoot, 'node_modules'), join(installed, 'node_modules'));
    mkdirSync(join(dir, 'node_modules/.bin'));
    symlinkSync('../rft-endpoints/bin/rft-endpoints.js', join(dir, 'node_modules/.bin/rft-endpoints'));
    expect(existsSync(join(installed, 'src'))).toBe(false); // so bin/ runs dist/

    const server = await spawnServer({ RFT_DATA_DIR: join(dir, 'data') }, { command: [join(dir, 'node_modules/.bin/rft-endpoints'), 'serve'], cwd: dir, timeoutMs: 60_000 });
    servers.push(server);
    const s = { url: server.url, key: keyOf(join(dir, 'data')) };
    expect(await toolNames(s)).toEqual(['lookup_price']);
    expect(JSON.parse(await callTool(s, 'lookup_price', { sku: 'a-1001' }))).toEqual({ sku: 'A-1001', name: 'Desk lamp', price_usd: 34.5, in_stock: 12 });
    const version = spawnSync(join(dir, 'node_modules/.bin/rft-endpoints'), ['--version'], { encoding: 'utf8' });
    expect(version.stdout.trim()).toBe(JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')).version);
    const check = spawnSync(join(dir, 'node_modules/.bin/rft-endpoints'), ['dataset', 'check', 'train.jsonl'], { cwd: dir, encoding: 'utf8', timeout: 60_000 });
    expect(check.stdout, check.stderr).toMatch(/train\.jsonl: 10 rows, 10 ok, 0 with problems; 0 problems.*grader price_match/);
    expect(check.status).toBe(0);
  }, 180_000);
});
