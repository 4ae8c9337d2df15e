// Adding a driver is its folder and one line in the list (issue 23): the fake driver of ./index.ts
// joins src/sandbox/drivers/index.ts by the one vi.mock line below, and then the config accepts
// RFT_SANDBOX=fake and its setting, the default cap is its own, the server's manager runs it, the
// loopback rule follows from its `isolates: false`, and the abuse suite's matrix includes it.
import { describe, expect, it, vi } from 'vitest';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { loadConfig } from '../../../../src/config.js';
import { DEFAULT_SANDBOX_CAP, sandboxCap } from '../../../../src/sandbox/capacity.js';
import { createSandboxProvider } from '../../../../src/sandbox/provider.js';
import { selectDriver } from '../../../../src/sandbox/select.js';
import { driverMatrix, driversPresent, isolates } from '../../helpers.js';

// The one line.
vi.mock('../../../../src/sandbox/drivers/index.js', async (original) => ({ DRIVERS: [...(await original<typeof import('../../../../src/sandbox/drivers/index.js')>()).DRIVERS, (await import('./index.js')).fake] }));

const log = pino({ level: 'silent' });

describe('a driver added by its folder and one line', () => {
  it('is a choice of RFT_SANDBOX, with its own setting in the sandbox section', () => {
    const c = loadConfig({ RFT_SANDBOX: 'fake', RFT_FAKE_GREETING: 'bonjour' });
    expect(c.sandbox.driver).toBe('fake');
    expect((c.sandbox as unknown as { fakeGreeting: string }).fakeGreeting).toBe('bonjour');
    expect((loadConfig({}).sandbox as unknown as { fakeGreeting: string }).fakeGreeting).toBe('hello');
    expect(() => loadConfig({ RFT_SANDBOX: 'nosuch' })).toThrow(expect.objectContaining({ code: 'RFT_ERR_CONFIG' }));
  });

  it('has its own default cap', () => {
    expect(DEFAULT_SANDBOX_CAP).toMatchObject({ fake: 3 });
    expect([sandboxCap(undefined, 'fake'), sandboxCap(7, 'fake')]).toEqual([3, 7]);
  });

  it('is what the server builds for RFT_SANDBOX=fake, and its sandboxes run commands with its setting', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'rft-fake-'));
    const config = loadConfig({ RFT_SANDBOX: 'fake', RFT_FAKE_GREETING: 'bonjour', RFT_DATA_DIR: dataDir, RFT_SANDBOX_WARM: '0' });
    const provider = await createSandboxProvider(config, log);
    try {
      expect(provider?.stats()).toMatchObject({ driver: 'fake', cap: 3, live: 0 });
      const sb = await provider!.acquire('trace_fake', { sandbox: { files: { 'a.txt': 'A' } } });
      expect(sb.driver).toBe('fake');
      const r = await sb.exec('cat a.txt; echo " $FAKE_GREETING"');
      expect(r.stdout).toBe('A bonjour\n');
      expect(provider!.stats().live).toBe(1);
    } finally {
      await provider?.close();
      await rm(dataDir, { recursive: true, force: true });
    }
  });

  it('isolates nothing, so a server listening beyond loopback refuses it', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'rft-fake-'));
    try {
      const config = loadConfig({ RFT_SANDBOX: 'fake', RFT_DATA_DIR: dataDir, HOST: '0.0.0.0', RFT_API_KEYS: 'k'.repeat(32) });
      await expect(createSandboxProvider(config, log)).rejects.toMatchObject({ code: 'RFT_ERR_SANDBOX_PROCESS_DRIVER' });
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });

  it('is built by selectDriver by its name', async () => {
    const d = await selectDriver('fake', { sandboxesRoot: join(tmpdir(), 'rft-fake-unused'), instanceId: 'fake-select' });
    expect(d.name).toBe('fake');
    await d.close?.();
  });

  it('is in the abuse suite\'s driver matrix, probed by its own check, as a driver that isolates nothing', async () => {
    expect(driverMatrix()).toContain('fake');
    expect((await driversPresent())['fake' as 'process']).toBe(true);
    expect(isolates('fake' as 'process')).toBe(false);
  });
});
