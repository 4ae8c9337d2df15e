// A real Prometheus (Debian's package) on 127.0.0.1 scrapes the server twice (GET /metrics with the
// key as a bearer token, and the credential-free RFT_METRICS_PORT listener); tool calls and grades
// of every outcome are driven, and the series are read back through Prometheus's HTTP API. The
// alert rules load and pass promtool, and every alert and Grafana panel expression evaluates.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeIf } from '../helpers/require.js';
import { repoRoot, startTestServer, type TestServer } from '../helpers/server.js';
import { bearer, fixtureGraders, functionCall, newTrace } from '../helpers/fixtures.js';
import { reexport, unitsDir } from '../cli/harness.js';
import { canonicalJson, sha256 } from '../../src/protocol/canonical.js';
import { INTERRUPTED_OUTPUT } from '../../src/ledger/ledger.js';
import { waitFor } from '../helpers/wait.js';

const have = (bin: string) => spawnSync('which', [bin]).status === 0;
/** A port of this suite's own fixed range (26000-26999): Prometheus cannot report a port 0 it picked. */
const PROMETHEUS_PORT = 26090;
const alerts = join(repoRoot, 'deploy/prometheus/alerts.yml');
const alertTests = join(repoRoot, 'deploy/prometheus/alerts.test.yml');
const grafana = join(repoRoot, 'deploy/grafana/rft-endpoints.json');

describeIf(have('prometheus') && have('promtool'), 'Prometheus', 'install it with apt-get install -y prometheus')('Prometheus scraping the server', () => {
  let server: TestServer;
  let prom: ChildProcess | undefined;
  let dir: string;
  const api = `http://127.0.0.1:${PROMETHEUS_PORT}`;

  beforeAll(async () => {
    // The fixture tools, plus the real shell (a sandbox) and read_file (path refusals).
    const tools = unitsDir({
      ...Object.fromEntries(['echo', 'fail', 'hang', 'json_result'].map((t) => [`${t}.ts`, reexport(`test/fixtures/units/tools/${t}.ts`)])),
      'shell.ts': reexport('tools/shell.ts'),
      'read_file.ts': reexport('tools/read_file.ts'),
    });
    server = await startTestServer({ toolsDir: tools, gradersDir: fixtureGraders, env: { RFT_SANDBOX: 'process', RFT_METRICS_PORT: '0', RFT_TOOL_BUDGET: '20' } });
    dir = mkdtempSync(join(tmpdir(), 'rft-prometheus-'));
    writeFileSync(join(dir, 'key'), server.key, { mode: 0o600 });
    const target = (url: string) => new URL(url).host;
    writeFileSync(
      join(dir, 'prometheus.yml'),
      JSON.stringify({
        global: { scrape_interval: '1s', evaluation_interval: '1s' },
        rule_files: [alerts],
        scrape_configs: [
          { job_name: 'rft', authorization: { type: 'Bearer', credentials_file: join(dir, 'key') }, static_configs: [{ targets: [target(server.url)] }] },
          { job_name: 'rft_open', static_configs: [{ targets: [target(server.app.rft.metricsListener!.url)] }] },
        ],
      }),
    );
    prom = spawn('prometheus', [
      `--config.file=${join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${PROMETHEUS_PORT}`, '--log.level=warn',
    ], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    prom.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    await waitFor('Prometheus to be ready', async () => {
      if (prom?.exitCode !== null) throw new Error(`prometheus exited: ${stderr}`);
      return (await fetch(`${api}/-/ready`)).status === 200 ? true : undefined;
    }, 60_000);
  }, 120_000);

  afterAll(async () => {
    if (prom && prom.exitCode === null) {
      const exited = new Promise((r) => prom!.once('exit', r));
      prom.kill('SIGTERM');
      await exited;
    }
    await server?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const query = async (q: string) => {
    const res = await fetch(`${api}/api/v1/query?query=${encodeURIComponent(q)}`);
    const body = (await res.json()) as { status: string; error?: string; data: { result: { metric: Record<string, string>; value: [number, string] }[] } };
    if (body.status !== 'success') throw new Error(`${q}: ${body.error}`);
    return body.data.result;
  };
  /** Label value -> sample value of a query grouped by one label. */
  const byLabel = async (q: string, label: string) => Object.fromEntries((await query(q)).map((r) => [r.metric[label], Number(r.value[1])]));
  const scalar = async (q: string) => Number((await query(q))[0]?.value[1] ?? NaN);

  it('reads back tool calls of every outcome, grades, failures by kind, sandboxes and integrity flags', async () => {
    const post = (url: string, body: unknown) => server.app.inject({ method: 'POST', url, headers: bearer(server.key), payload: body as object });
    // ok, tool_error, invalid_arguments, timeout
    await post('/tools', functionCall('echo', { text: 'x' }));
    await post('/tools', functionCall('fail', {}));
    await post('/tools', functionCall('echo', '{"text":'));
    await post('/tools', functionCall('hang', {}));
    // replayed: the trainer's retry
    const retried = functionCall('echo', { text: 'again' });
    await post('/tools', retried);
    await post('/tools', retried);
    // budget_exhausted
    const spent = newTrace();
    await post('/tools', functionCall('echo', { text: 'a' }, { trace_id: spent, item: { tool_budget: 1 } }));
    await post('/tools', functionCall('echo', { text: 'b' }, { trace_id: spent, item: { tool_budget: 1 } }));
    // interrupted: a call left running by a restart, then retried
    const lost = functionCall('echo', { text: 'lost' });
    const args = canonicalJson({ text: 'lost' });
    await server.app.rft.store.beginCall({
      traceId: lost.trace_id, callId: lost.call_id, tool: 'echo', arguments: args, argsHash: sha256('echo', args), cost: 1, budgetLimit: 20,
      item: {}, credential: null, now: Date.now(), overBudgetOutput: '',
    });
    await server.app.rft.store.markInterrupted(INTERRUPTED_OUTPUT, Date.now());
    await post('/tools', lost);
    // a sandbox, and a path out of it
    const sandboxed = newTrace();
    expect((await post('/tools', functionCall('shell', { command: 'echo hi' }, { trace_id: sandboxed }))).json().output).toContain('hi');
    await post('/tools', functionCall('read_file', { path: '../../etc/passwd' }, { trace_id: sandboxed }));
    // grades: ok (then replayed), and a grader crash
    const graded = { sample: { output_text: '42' }, item: { reference_answer: '42' }, trace_id: spent };
    expect((await post('/graders/exact', graded)).statusCode).toBe(200);
    await post('/graders/exact', graded);
    expect((await post('/graders/broken', { sample: { output_text: 'x' }, item: {}, trace_id: newTrace() })).statusCode).toBe(500);

    // Waits for a scrape taken after the last request above (the broken grade): one taken between
    // the tool calls and the grades satisfied a wait on the tool calls alone, and the checks of the
    // grades below then read that scrape.
    await expect
      .poll(async () => ({
        tools: await byLabel('sum by (outcome) (rft_tool_calls_total{job="rft"})', 'outcome'),
        broken: await scalar('sum(rft_grades_total{job="rft",grader="broken",outcome="error"})'),
      }), { timeout: 30_000, interval: 500 })
      .toMatchObject({ tools: { ok: 4, tool_error: 2, invalid_arguments: 1, timeout: 1, budget_exhausted: 1, replayed: 1, interrupted: 1 }, broken: 1 });
    expect(await byLabel('sum by (outcome) (rft_grades_total{job="rft",grader="exact"})', 'outcome')).toEqual({ ok: 1, error: 0, replayed: 1, bad_row: 0 });
    const failures = await query('rft_failures_total{job="rft"} > 0');
    const f = Object.fromEntries(failures.map((r) => [`${r.metric.kind}/${r.metric.where}`, Number(r.value[1])]));
    expect(f).toMatchObject({ 'model/tool': 2, 'model/arguments': 1, 'model/budget': 1, 'infra/tool': 1, 'infra/restart': 1, 'infra/grader': 1 });
    expect(await scalar('sum(rft_tool_call_duration_seconds_count{job="rft",tool="echo"})')).toBe(4);
    expect(await scalar('sum(rft_grade_score_bucket{job="rft",grader="exact",le="1"}) - sum(rft_grade_score_bucket{job="rft",grader="exact",le="0.9"})')).toBe(1);
    expect(await scalar('sum(rft_rollout_tool_calls_sum{job="rft"})')).toBe(2);
    expect(await scalar('sum(rft_budget_exhausted_rollouts_total{job="rft"})')).toBe(1);
    expect(await scalar('sum(rft_http_request_duration_seconds_count{job="rft",route="/graders/:name",status="500"})')).toBe(1);
    expect(await byLabel('rft_sandboxes{job="rft"}', 'state')).toEqual({ live: 1, queued: 0 });
    expect(await scalar('sum(rft_sandbox_create_duration_seconds_count{job="rft",driver="process"})')).toBe(1);
    expect(await scalar('sum(rft_sandbox_queue_wait_seconds_count{job="rft",outcome="granted"})')).toBe(1);
    expect(await scalar('sum(rft_integrity_flags_total{job="rft",kind="path_escape"})')).toBe(1);
    expect(await scalar('process_resident_memory_bytes{job="rft"}')).toBeGreaterThan(10e6);
    // the credential-free listener serves the same registry
    // (scraped on its own schedule: waited for like the first job, not assumed to be as far along)
    await expect.poll(() => byLabel('up', 'job'), { timeout: 30_000, interval: 500 }).toEqual({ rft: 1, rft_open: 1 });
    await expect.poll(() => scalar('sum(rft_tool_calls_total{job="rft_open",outcome="timeout"})'), { timeout: 30_000, interval: 500 }).toBe(1);
  }, 90_000);

  it('loads the alert rules, and evaluates every alert and Grafana panel expression', async () => {
    await expect
      .poll(async () => {
        const res = (await (await fetch(`${api}/api/v1/rules`)).json()) as { data: { groups: { rules: { name: string; health: string }[] }[] } };
        return res.data.groups.flatMap((g) => g.rules).filter((r) => r.health === 'ok').length;
      }, { timeout: 30_000, interval: 500 })
      .toBe(8);
    const panels = (JSON.parse(readFileSync(grafana, 'utf8')) as { panels: { targets?: { expr: string }[] }[] }).panels;
    const exprs = panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr));
    expect(exprs.length).toBeGreaterThan(15);
    for (const e of exprs) {
      const result = await query(e.replaceAll('$job', '.+').replaceAll('$__rate_interval', '1m'));
      expect(Array.isArray(result), e).toBe(true);
    }
    // and a panel draws what the server does: one more call shows as a rate
    await server.app.inject({ method: 'POST', url: '/tools', headers: bearer(server.key), payload: functionCall('echo', { text: 'live' }) });
    await expect
      .poll(async () => (await query('sum by (outcome) (rate(rft_tool_calls_total{job=~".+"}[1m])) > 0')).map((r) => r.metric.outcome), { timeout: 30_000 })
      .toContain('ok');
  }, 60_000);

  it('passes promtool on the alert rules and their unit tests', () => {
    for (const args of [['check', 'rules', alerts], ['test', 'rules', alertTests]]) {
      const r = spawnSync('promtool', args, { encoding: 'utf8' });
      expect(r.status, `${args.join(' ')}: ${r.stdout}${r.stderr}`).toBe(0);
    }
    expect(existsSync(grafana)).toBe(true);
  });
});
