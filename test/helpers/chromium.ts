// Headless Chromium (Debian's chromium, driven by playwright-core) for the dashboard's tests.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';

/** Where Chromium is installed, or undefined (the tests then skip: apt-get install -y chromium). */
export const executablePath = ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p) => existsSync(p));

/** The flags the project runs Chromium with (headless is playwright's own). */
export const CHROMIUM_FLAGS = [
  '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
  '--disable-component-update', '--disable-sync',
];

export async function launchChromium(): Promise<{ context: BrowserContext; page: Page; close(): Promise<void> }> {
  const userDataDir = mkdtempSync(join(tmpdir(), 'rft-chromium-'));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: executablePath!,
    headless: true,
    args: CHROMIUM_FLAGS,
    viewport: { width: 1400, height: 1000 },
  });
  const page = context.pages()[0] ?? (await context.newPage());
  return {
    context,
    page,
    close: async () => {
      await context.close();
      rmSync(userDataDir, { recursive: true, force: true });
    },
  };
}
