/// <reference lib="dom" />
// The dashboard's warm pool panel in headless Chromium against a real server with bubblewrap: after
// two training steps (bursts of new rollouts), the panel's figures are those of GET /v1/stats (warm,
// in use, predicted step, per kind, and each step's size, hits and misses); a server with sandboxes
// off says so in the panel.
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { describeIf } from '../helpers/require.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { executablePath, launchChromium } from '../helpers/chromium.js';
import { pool, poolWarm, startPoolServer, step } from '../helpers/pool-steps.js';
import { driversPresent } from '../sandbox/helpers.js';

const present = await driversPresent();
const STEP = 5;

async function signIn(page: Page, srv: TestServer): Promise<void> {
  await page.goto(`${srv.url}/dashboard`);
  await page.evaluate(() => sessionStorage.clear());
  await page.goto(`${srv.url}/dashboard`);
  await page.locator('#signin').waitFor({ state: 'visible' });
  await page.fill('#key', srv.key);
  await page.click('#signin-button');
  await page.locator('#overview').waitFor({ state: 'visible' });
}

/** What the panel shows, read from its text. */
function panel(page: Page) {
  return page.evaluate(() => {
    const num = (el: Element | null | undefined) => Number(el?.textContent?.replace(/[^\d.]/g, ''));
    const figure = (name: string) => num(document.querySelector(`#pool-cards [data-figure="${name}"] .value`));
    const cells = (tr: Element) => [...tr.querySelectorAll('td')].map((td) => td.textContent ?? '');
    return {
      warm: figure('warm'),
      inUse: figure('in-use'),
      predicted: figure('predicted'),
      hits: figure('hits'),
      misses: figure('misses'),
      bounds: document.getElementById('pool-bounds')?.textContent ?? '',
      kinds: [...document.querySelectorAll('#pool-kinds tbody tr[data-kind]')].map((tr) => ({ kind: tr.getAttribute('data-kind'), cells: cells(tr).slice(1).map(Number) })),
      steps: [...document.querySelectorAll('#pool-steps tbody tr[data-started]')].map((tr) => ({ started: tr.getAttribute('data-started'), cells: cells(tr).slice(2, 5).map(Number) })),
    };
  });
}

describeIf(executablePath !== undefined && present.bwrap, 'Chromium and bubblewrap', 'apt-get install -y chromium bubblewrap')('the warm pool panel in Chromium', () => {
  let srv: TestServer;
  let browser: Awaited<ReturnType<typeof launchChromium>>;
  beforeAll(async () => {
    srv = await startPoolServer();
    browser = await launchChromium();
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await srv?.close();
  });

  it("shows the pool's figures and the last steps as GET /v1/stats has them", { timeout: 120_000 }, async () => {
    await step(srv, 'trace_dash1', STEP);
    await poolWarm(srv, STEP);
    await step(srv, 'trace_dash2', STEP);
    await poolWarm(srv, STEP); // refilled for the next step: the figures stay put from here
    const api = await pool(srv);
    expect(api.kinds[0]!.steps.map((s) => s.size)).toEqual([STEP, STEP]);

    const { page } = browser;
    await signIn(page, srv);
    // The overview refreshes every 5 s; the panel is drawn from the same reply as the cards above it.
    await page.locator('#pool-cards').waitFor({ timeout: 20_000 });
    const shown = await panel(page);
    const k = api.kinds[0]!;
    expect(shown).toMatchObject({ warm: api.warm, inUse: k.in_use, predicted: api.predicted, hits: api.hits, misses: api.misses });
    expect(shown.kinds).toEqual([{ kind: k.kind, cells: [k.warm, k.in_use, k.target, k.predicted] }]);
    // Newest first, each with its size, hits and misses.
    expect(shown.steps).toEqual(k.steps.slice().reverse().map((s) => ({ started: s.started_at, cells: [s.size, s.hits, s.misses] })));
    expect(shown.bounds).toContain(`up to ${api.bounds.max}`);
    expect(shown.bounds).toContain(`${api.bounds.budget_mb} MB`);
    expect(shown.bounds).toContain(`cap of ${api.bounds.cap}`);
  });

  // Its own time, above the sum of its waits (a series run at load 20-50 passed the 30 s default while
  // still in one of them, and said no more): a slow step fails with its name and time.
  it('says plainly that sandboxes are off on a server without them', { timeout: 120_000 }, async () => {
    const t0 = Date.now();
    let phase = 'starting a server without sandboxes';
    const off = await startTestServer();
    try {
      const { page } = browser;
      phase = 'signing in';
      await signIn(page, off);
      phase = 'waiting for the panel to say sandboxes are off';
      const off_ = page.locator('#pool [data-pool="off"]');
      await off_.waitFor({ timeout: 30_000 });
      expect(await off_.textContent()).toContain('Sandboxes are off');
      expect(await page.locator('#pool-cards').count()).toBe(0);
    } catch (e) {
      throw new Error(`${phase}, ${Date.now() - t0} ms in: ${String(e)}`);
    } finally {
      await off.close();
    }
  });
});
