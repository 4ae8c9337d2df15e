// A driver as a new one would be written: its own folder, declared with defineDriver, nothing else
// of the server edited. It runs commands through the process driver (so it isolates nothing and
// says so) under its own name, and has a setting of its own.
import { z } from 'zod';
import { defineDriver } from '../../../../src/sandbox/driver-module.js';
import type { Sandbox, SandboxDriver, SandboxSpec } from '../../../../src/sandbox/types.js';

class FakeDriver implements SandboxDriver {
  readonly name = 'fake';
  constructor(
    private readonly inner: SandboxDriver,
    /** Put in every sandbox's environment as FAKE_GREETING, to show the setting reached the driver. */
    readonly greeting: string,
  ) {}
  available(): Promise<boolean> {
    return this.inner.available();
  }
  async create(spec: SandboxSpec): Promise<Sandbox> {
    const sb = await this.inner.create(spec);
    const greeting = this.greeting;
    return new Proxy(sb, {
      get(target, p) {
        if (p === 'driver') return 'fake';
        if (p === 'exec') return (cmd: string | string[], opts: Parameters<Sandbox['exec']>[1] = {}) => target.exec(cmd, { ...opts, env: { FAKE_GREETING: greeting, ...opts.env } });
        const v = Reflect.get(target, p, target) as unknown;
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
  }
  reapOrphans(keep?: ReadonlySet<string>): Promise<number> {
    return this.inner.reapOrphans(keep);
  }
  async close(): Promise<void> {
    await this.inner.close?.();
  }
}

export const fake = defineDriver({
  name: 'fake',
  defaultCap: 3,
  settings: { RFT_FAKE_GREETING: z.string().min(1).default('hello') },
  options: (s) => ({ fakeGreeting: s.RFT_FAKE_GREETING }),
  shared: false,
  isolates: false,
  async create(opts) {
    const { processDriver } = await import('../../../../src/sandbox/drivers/process/index.js');
    return new FakeDriver(await processDriver.create(opts), opts.fakeGreeting ?? 'hello');
  },
});
