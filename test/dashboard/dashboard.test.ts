/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
// The live dashboard in headless Chromium (Debian's chromium, driven by playwright-core) over an
// emulated run: the real CLI `rollout` plays finqa against the real server with a scripted model
// that "learns" (test/helpers/learning-script.ts). It signs in, sees the charts drawn with that
// run's data, filters the rollout list, and opens a rollout; the key never appears in a URL.
//
// RFT_DASHBOARD_SCREENSHOT=docs/dashboard.png also writes the README's screenshot, taken during a
// longer run (RFT_DASHBOARD_RUN_SECONDS, default 180) while it is still going.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { executablePath, launchChromium } from '../helpers/chromium.js';
import { describeIf } from '../helpers/require.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { startScriptedModel, type ScriptedModel } from '../helpers/scripted-model.js';
import { learningScript } from '../helpers/learning-script.js';
import { finqaToolsDir, removeTempDirs, repoRoot, runCli, spawnCli, tempDir, unitsDir, reexport, writeJsonl } from '../cli/harness.js';
import { waitFor } from '../helpers/wait.js';

const screenshotOut = process.env.RFT_DASHBOARD_SCREENSHOT;
const runSeconds = Number(process.env.RFT_DASHBOARD_RUN_SECONDS ?? 180);

interface Row {
  messages: { role: string; content: string }[];
  reference_answer: string;
  [k: string]: unknown;
}

describeIf(executablePath !== undefined, 'Chromium', 'install it with apt-get install -y chromium')('the live dashboard in Chromium', () => {
  let server: TestServer;
  let model: ScriptedModel;
  let browser: Awaited<ReturnType<typeof launchChromium>>;
  let cheats = 0;
  const requested: string[] = [];
  const rows = readFileSync(join(repoRoot, 'examples/finqa/train.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Row);
  const question = (r: Row) => r.messages.filter((m) => m.role === 'user').at(-1)!.content;

  beforeAll(async () => {
    const graders = unitsDir({ 'answer_match.ts': reexport('graders/answer_match.ts') });
    server = await startTestServer({ toolsDir: finqaToolsDir(), gradersDir: graders });
    const long = screenshotOut !== undefined;
    const used = rows.slice(0, long ? 12 : 6);
    const k = long ? 12 : 3;
    const run = learningScript(used.map((r) => ({ question: question(r), reference: String(r.reference_answer) })), used.length * k, { cheatEvery: long ? 15 : 6 });
    // In the long run, pace the model (about 5 turns per rollout, 4 at a time) to last runSeconds.
    const latencyMs = long ? Math.round((runSeconds * 1000 * 4) / (used.length * k * 5)) : 0;
    model = await startScriptedModel({ script: run.script, latencyMs });
    const work = tempDir();
    const dataset = join(work, 'dataset.jsonl');
    writeJsonl(dataset, used);
    const args = ['rollout', '--dataset', dataset, '--server', server.url, '--key', server.key, '--model', 'scripted', '--base-url', model.baseURL,
      '--out', join(work, 'results.jsonl'), '-k', String(k), '--concurrency', '4'];
    browser = await launchChromium();
    browser.page.on('request', (r) => requested.push(r.url()));
    if (long) {
      const child = spawnCli(args);
      const ended = new Promise((resolve) => child.on('close', resolve));
      // Two thirds into the run: the screenshot shows a learning curve well under way, whatever the machine's pace.
      await waitFor('two thirds of the rollouts started', () => (run.started() * 3 >= used.length * k * 2 ? true : undefined), runSeconds * 2000);
      await signIn(browser.page);
      await browser.page.selectOption('#curve-window', '5m');
      await waitForCharts(browser.page);
      await browser.page.waitForTimeout(6_000); // one more refresh with the newest bucket
      await browser.page.screenshot({ path: screenshotOut, fullPage: true });
      await browser.page.evaluate(() => sessionStorage.clear()); // the tests below sign in themselves
      await ended;
    } else {
      const r = await runCli(args);
      expect(r.code, r.stderr).toBe(0);
    }
    cheats = Math.floor(run.started() / (long ? 15 : 6));
  }, 600_000);

  afterAll(async () => {
    await browser?.close();
    await model?.close();
    await server?.close();
    removeTempDirs();
  });

  async function signIn(page: Page): Promise<void> {
    await page.goto(`${server.url}/dashboard`);
    await page.locator('#signin').waitFor({ state: 'visible' });
    await page.fill('#key', server.key);
    await page.click('#signin-button');
    await page.locator('#overview').waitFor({ state: 'visible' });
  }

  const points = (page: Page, id: string) => page.evaluate((i) => Number(document.getElementById(i)?.dataset.points ?? 0), id);

  async function waitForCharts(page: Page): Promise<void> {
    await page.waitForFunction(() =>
      ['chart-outcomes', 'chart-score', 'chart-calls', 'chart-budget', 'chart-rollouts'].every((id) => Number(document.getElementById(id)?.dataset.points ?? 0) > 0),
    );
  }

  it('signs in with a key typed once, kept in the tab and never put in a URL', async () => {
    const { page } = browser;
    await signIn(page);
    expect(page.url()).toBe(`${server.url}/dashboard`);
    await page.reload();
    await page.locator('#overview').waitFor({ state: 'visible' }); // still signed in: the key is kept in this tab
    expect(requested.some((u) => u.includes(server.key))).toBe(false);
    expect(await page.evaluate(() => document.cookie)).toBe('');
  });

  it('draws the charts with the data of the run: outcomes, learning curve, tool calls per rollout, budget', async () => {
    const { page } = browser;
    await page.selectOption('#curve-window', '1h');
    await waitForCharts(page);
    expect(await points(page, 'chart-score')).toBeGreaterThan(0);
    // the canvases hold ink, not a blank plot area
    const inked = await page.evaluate(() =>
      [...document.querySelectorAll('figure.chart canvas')].map((c) => {
        const canvas = c as HTMLCanvasElement;
        const data = canvas.getContext('2d')!.getImageData(0, 0, canvas.width, canvas.height).data;
        let n = 0;
        for (let i = 3; i < data.length; i += 4) if (data[i]! > 0) n++;
        return n;
      }),
    );
    expect(inked.length).toBe(6);
    for (const n of inked) expect(n).toBeGreaterThan(500);
    const tools = await page.locator('#tools-table tbody tr td:first-child').allTextContents();
    expect(tools).toEqual(expect.arrayContaining(['search_docs', 'list_docs', 'read_doc']));
    expect(await page.locator('#integrity-table').textContent()).toContain('no_tool_score');
  });

  it('filters the rollout list and opens a rollout: its calls in order, with arguments and outputs, and its grade', async () => {
    const { page } = browser;
    await page.click('nav a[href="#/rollouts"]');
    await page.waitForFunction(() => Number(document.getElementById('rollouts-table')?.dataset.count ?? 0) > 0);
    await page.selectOption('select[name="flag"]', 'no_tool_score');
    await page.waitForFunction((n) => Number(document.getElementById('rollouts-table')?.dataset.count) === n, cheats);
    const flagged = await page.locator('#rollouts-table tbody tr').allTextContents();
    for (const row of flagged) expect(row).toContain('no_tool_score');
    expect(page.url()).toContain('flag=no_tool_score');

    await page.click('#filter-clear');
    // The answer for the first filter (tool only) is held until the list for both filters is drawn:
    // released late, it must not replace the newer list (a CI run once showed that race). The page's
    // fetch is wrapped to hold it and to say when its body has been read and acted on.
    await page.evaluate(() => {
      const w = window as unknown as { fetch: typeof fetch; __release?: () => void; __heldDone?: boolean };
      const held = new Promise<void>((r) => (w.__release = r));
      const original = w.fetch.bind(w);
      w.fetch = async (input, init) => {
        if (!/\/v1\/rollouts\?tool=read_doc&limit=/.test(String(input))) return original(input, init);
        await held;
        const res = await original(input, init);
        const json = res.json.bind(res);
        // What the page does with the body runs in the microtasks after json() settles; a task
        // queued then runs after them.
        res.json = () => json().finally(() => setTimeout(() => (w.__heldDone = true), 0));
        return res;
      };
    });
    await page.selectOption('select[name="tool"]', 'read_doc');
    await page.fill('input[name="min_score"]', '0.5');
    await page.locator('input[name="min_score"]').dispatchEvent('change');
    const bothFilters = () => {
      const t = document.getElementById('rollouts-table');
      const f = new URLSearchParams(t?.dataset.filters ?? '');
      return f.get('tool') === 'read_doc' && f.get('min_score') === '0.5' && Number(t?.dataset.count ?? 0) > 0;
    };
    await page.waitForFunction(bothFilters);
    await page.evaluate(() => (window as unknown as { __release: () => void }).__release());
    await page.waitForFunction(() => (window as unknown as { __heldDone?: boolean }).__heldDone === true);
    expect(await page.evaluate(bothFilters)).toBe(true);
    const scores = await page.locator('#rollouts-table tbody tr td:nth-child(5)').allTextContents();
    for (const s of scores) expect(Number(s)).toBeGreaterThanOrEqual(0.5);

    const traceId = await page.locator('#rollouts-table tbody tr').first().getAttribute('data-trace-id');
    await page.locator('#rollouts-table tbody tr').first().click();
    await page.locator('#rollout').waitFor({ state: 'visible' });
    await page.waitForFunction(() => (document.getElementById('calls-table')?.querySelectorAll('tbody tr').length ?? 0) > 1);
    expect(await page.locator('#rollout-title').textContent()).toContain(traceId);
    const tools = await page.locator('#calls-table tbody tr td:nth-child(2)').allTextContents();
    expect(tools.slice(0, 2).sort()).toEqual(['list_docs', 'search_docs']);
    expect(tools).toContain('read_doc');
    expect(await page.locator('#calls-table').textContent()).toContain('"query"');
    expect(await page.locator('#grades-table tbody').textContent()).toContain('answer_match');
    expect(requested.some((u) => u.includes(server.key))).toBe(false);
    if (screenshotOut) await page.screenshot({ path: screenshotOut.replace(/\.png$/, '-rollout.png'), fullPage: true });
  });

  it('shows what the model wrote as text: markup in an output cannot script the page', async () => {
    const { page } = browser;
    const trace = 'trace_dashboard_markup';
    const doc = '<img src=x onerror="window.__pwned = 1">';
    const res = await fetch(`${server.url}/tools`, {
      method: 'POST',
      headers: { authorization: `Bearer ${server.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ type: 'function_call', call_id: 'c1', name: 'read_doc', arguments: JSON.stringify({ doc_id: doc }), trace_id: trace, item: {} }),
    });
    expect(res.status).toBe(200);
    await page.goto(`${server.url}/dashboard#/rollout/${trace}`);
    await page.locator(`#rollout[data-trace-id="${trace}"]`).waitFor({ state: 'attached' });
    expect(await page.locator('#calls-table tbody tr').count()).toBe(1);
    expect(await page.locator('#calls-table').textContent()).toContain(doc);
    expect(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
    expect(await page.locator('#calls-table img').count()).toBe(0);
  });

  const post = async (path: string, body: unknown, run?: string) => {
    const res = await fetch(`${server.url}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${server.key}`, 'content-type': 'application/json', ...(run ? { 'x-rft-run': run } : {}) },
      body: JSON.stringify(body),
    });
    expect(res.status, await res.clone().text()).toBe(200);
    return res.json() as Promise<Record<string, unknown>>;
  };
  const getJson = async <T,>(path: string): Promise<T> => (await fetch(`${server.url}${path}`, { headers: { authorization: `Bearer ${server.key}` } })).json() as Promise<T>;

  it("shows a rollout's row (its question and the fields the grader reads) and its final answer beside the score", async () => {
    const { page } = browser;
    const { rollouts } = await getJson<{ rollouts: { trace_id: string; last_score: number | null }[] }>('/v1/rollouts?limit=50&grader=answer_match');
    const graded = rollouts.find((r) => r.last_score !== null)!;
    const rec = await getJson<{ item: Row; grades: { sample: { output_text: string }; score: number }[] }>(`/v1/rollouts/${graded.trace_id}`);
    await page.goto(`${server.url}/dashboard#/rollout/${graded.trace_id}`);
    await page.locator(`#rollout[data-trace-id="${graded.trace_id}"] #rollout-answer [data-score]`).waitFor();
    expect(await page.locator('#rollout-row [data-field="messages"]').textContent()).toContain(question(rec.item));
    expect(await page.locator('#rollout-row [data-field="reference_answer"]').textContent()).toContain(String(rec.item.reference_answer));
    expect(await page.locator('#rollout-answer [data-field="answer"] pre').textContent()).toBe(rec.grades.at(-1)!.sample.output_text);
    expect(Number(await page.locator('#rollout-answer [data-score]').getAttribute('data-score'))).toBe(graded.last_score);
  });

  it('shows a row and an answer holding markup as text, and a huge answer cut with a note, not whole', async () => {
    const { page } = browser;
    const trace = 'trace_dashboard_row_markup';
    const script = '<script>window.__pwned = 2</script><img src=x onerror="window.__pwned = 3">';
    const item = { messages: [{ role: 'user', content: `What is ${script}?` }], reference_answer: script, notes: script };
    const answer = `Answer: ${script} ${'x'.repeat(900_000)}`;
    await post('/tools', { type: 'function_call', call_id: 'c1', name: 'list_docs', arguments: '{}', trace_id: trace, item });
    await post('/grade', { sample: { output_text: answer, output_tools: [], choices: [] }, item, trace_id: trace });
    await page.goto(`${server.url}/dashboard#/rollout/${trace}`);
    await page.locator(`#rollout[data-trace-id="${trace}"] #rollout-answer [data-score]`).waitFor();
    expect(await page.locator('#rollout-row [data-field="messages"]').textContent()).toContain(`What is ${script}?`);
    expect(await page.locator('#rollout-row [data-field="notes"]').textContent()).toContain(script);
    const shown = (await page.locator('#rollout-answer [data-field="answer"]').textContent())!;
    expect(shown.startsWith(`final answer (sample.output_text)Answer: ${script}`)).toBe(true);
    expect(shown.length).toBeLessThan(20_000);
    expect(shown).toMatch(/more characters not shown/);
    expect(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
    expect(await page.locator('#rollout img, #rollout script').count()).toBe(0);
    // the whole page stays small: no text node holds the answer whole
    expect(await page.evaluate(() => document.body.innerText.length)).toBeLessThan(200_000);
  });

  it("never shows the previous rollout under a new rollout's address while the new one loads", async () => {
    const { page } = browser;
    const { rollouts } = await getJson<{ rollouts: { trace_id: string; last_score: number | null }[] }>('/v1/rollouts?limit=50&grader=answer_match');
    const [a, b] = rollouts.filter((r) => r.last_score !== null);
    expect(a && b, 'two graded rollouts').toBeTruthy();
    await page.goto(`${server.url}/dashboard#/rollout/${a!.trace_id}`);
    await page.locator(`#rollout[data-trace-id="${a!.trace_id}"] #rollout-answer [data-score]`).waitFor();
    // hold B's record until the view has been looked at
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const pattern = `**/v1/rollouts/${encodeURIComponent(b!.trace_id)}`;
    await page.route(pattern, async (route) => {
      await held;
      await route.continue();
    });
    try {
      await page.goto(`${server.url}/dashboard#/rollout/${b!.trace_id}`);
      await page.waitForFunction((t) => document.getElementById('rollout-title')?.textContent?.includes(t), b!.trace_id);
      expect(await page.locator('#rollout').getAttribute('data-trace-id')).toBeNull();
      expect(await page.locator('#rollout-answer [data-score], #rollout-row [data-field]').count()).toBe(0);
      expect(await page.locator('#calls-table tbody tr, #grades-table tbody tr').count()).toBe(0);
    } finally {
      release();
    }
    await page.locator(`#rollout[data-trace-id="${b!.trace_id}"] #rollout-answer [data-score]`).waitFor();
    await page.unroute(pattern);
  });

  it('narrows every view to a run: the rollout list and the figures of two labelled runs are apart', async () => {
    const { page } = browser;
    const row = rows[0]!;
    const item = { ...row };
    for (const [run, n] of [['run-a', 2], ['run-b', 1]] as const) {
      for (let i = 0; i < n; i++) {
        const trace = `trace_${run}_${i}`;
        await post('/tools', { type: 'function_call', call_id: 'c1', name: 'list_docs', arguments: '{}', trace_id: trace, item }, run);
        await post('/grade', { sample: { output_text: `Answer: ${String(row.reference_answer)}`, output_tools: [], choices: [] }, item, trace_id: trace }, run);
      }
    }
    await page.goto(`${server.url}/dashboard#/rollouts`);
    const listed = async (run: string) => {
      await page.fill('#run', run);
      await page.locator('#run').dispatchEvent('change');
      await page.waitForFunction((r) => new URLSearchParams(document.getElementById('rollouts-table')?.dataset.filters ?? '').get('run') === r, run);
      return page.locator('#rollouts-table tbody tr').evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-trace-id')));
    };
    expect((await listed('run-a')).sort()).toEqual(['trace_run-a_0', 'trace_run-a_1']);
    expect(await listed('run-b')).toEqual(['trace_run-b_0']);
    expect(page.url()).toContain('run=run-b');
    // the overview keeps the run (the tab holds it): its figures count run-b's one rollout
    await page.click('nav a[href="#/"]');
    await page.waitForFunction(() => document.getElementById('curve-span')?.dataset.rollouts === '1');
    await page.fill('#run', 'run-a');
    await page.locator('#run').dispatchEvent('change');
    await page.waitForFunction(() => document.getElementById('curve-span')?.dataset.rollouts === '2');
    await page.fill('#run', '');
    await page.locator('#run').dispatchEvent('change');
    await page.waitForFunction(() => Number(document.getElementById('curve-span')?.dataset.rollouts) > 3);
  });

  it("fits the learning curve's window to the run: a short run fills the chart, not the edge of a 6-hour window", async () => {
    const { page } = browser;
    const { rollouts } = await getJson<{ rollouts: { created_at: string }[] }>('/v1/rollouts?limit=500');
    const first = Math.min(...rollouts.map((r) => Date.parse(r.created_at)));
    await page.goto(`${server.url}/dashboard#/`);
    await page.selectOption('#curve-window', '6h');
    await page.waitForFunction(() => (document.getElementById('curve-span')?.textContent ?? '').startsWith('fitted'));
    const span = await page.locator('#curve-span').evaluate((el) => ({ since: Date.parse((el as HTMLElement).dataset.since!), until: Date.parse((el as HTMLElement).dataset.until!) }));
    expect(span.since).toBeLessThanOrEqual(first);
    // the whole run is inside, and it takes at least half the window
    expect(span.until - span.since).toBeLessThan(Math.max(2 * (Date.now() - first), 2 * 60_000));
    // the score chart draws every graded bucket of the fitted window (how many: as fast as the run was graded)
    const fitted = await getJson<{ learning_curve: { mean_score: (number | null)[] }[] }>(
      `/v1/stats?since=${span.since}&until=${span.until}&include=rollouts,grades,integrity`,
    );
    const graded = fitted.learning_curve.reduce((n, c) => n + c.mean_score.filter((v) => v !== null).length, 0);
    expect(graded).toBeGreaterThan(0);
    expect(await points(page, 'chart-score')).toBe(graded);
  });

  it('renders the API reference at /docs from this server alone', async () => {
    const { page } = browser;
    const seen: string[] = [];
    page.on('request', (r) => seen.push(r.url()));
    await page.goto(`${server.url}/docs/`);
    await page.waitForFunction(() => document.querySelectorAll('.opblock').length > 20);
    const text = await page.locator('#swagger-ui').textContent();
    for (const path of ['/tools', '/v1/stats', '/v1/rollouts/{trace_id}', '/metrics']) expect(text).toContain(path);
    expect(seen.filter((u) => !u.startsWith(server.url) && !u.startsWith('data:'))).toEqual([]);
  });

  it('signs out, forgetting the key, and refuses a wrong key', async () => {
    const { page } = browser;
    await page.goto(`${server.url}/dashboard`);
    await page.locator('#overview').waitFor({ state: 'visible' });
    await page.click('#signout');
    await page.locator('#signin').waitFor({ state: 'visible' });
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
    await page.fill('#key', 'not-the-key-0000000000');
    await page.click('#signin-button');
    await page.waitForFunction(() => (document.getElementById('signin-error')?.textContent ?? '') !== '');
    expect(await page.locator('#signin').isVisible()).toBe(true);
  });
});
