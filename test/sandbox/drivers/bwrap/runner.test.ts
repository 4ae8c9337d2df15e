// A bwrap sandbox's runner listens at the supervisor for its sandbox's holder dying; it stops when
// the sandbox is destroyed. A soak found one listener (and with it the runner, its workdir and sets,
// about 1 KB) kept per sandbox ever created, for the life of the process.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { BwrapDriver } from '../../../../src/sandbox/drivers/bwrap/driver.js';
import type { Supervisor } from '../../../../src/sandbox/drivers/bwrap/supervisor/client.js';
import { describeIf } from '../../../helpers/require.js';
import { driversPresent, spec, tempRoot } from '../../helpers.js';

const present = await driversPresent();

describeIf(present.bwrap, 'bwrap runner', 'bubblewrap not available')('bwrap runner (bwrap)', () => {
  let tmp: Awaited<ReturnType<typeof tempRoot>>;
  let driver: BwrapDriver;
  /** How many runners listen at the driver's supervisor (its private list, a Set or an array). */
  const listeners = () => {
    const l = ((driver as unknown as { supervisor: Supervisor }).supervisor as unknown as { goneListeners: { size?: number; length?: number } }).goneListeners;
    return l.size ?? l.length;
  };
  beforeAll(async () => {
    tmp = await tempRoot();
    driver = new BwrapDriver({ sandboxesRoot: tmp.root, instanceId: 'test-runner' });
    expect(await driver.available()).toBe(true);
  });
  afterAll(async () => {
    await driver?.close();
    await tmp?.cleanup();
  });

  it('keeps nothing at the supervisor for a sandbox once it is destroyed', async () => {
    const sandboxes = await Promise.all(Array.from({ length: 6 }, (_, i) => driver.create(spec(`trace_runner_${i}`))));
    for (const sb of sandboxes) expect((await sb.exec('echo ok')).stdout).toBe('ok\n');
    expect(listeners()).toBe(6);
    await Promise.all(sandboxes.map((sb) => sb.destroy()));
    expect(listeners()).toBe(0);
  });
});
