// The bwrap supervisor never drops a command's output. It keeps an exited command's pipes open for a
// short linger (for what escaped the command and still holds them), then closes them; under load its
// loop came back to a command after the linger, with the exit reaped and the output still unread in
// the pipe, and closed it unread: exit code 0 and an empty stdout (196 of 2,500 calls in a 500-rollout
// burst). Staged here with a linger of 0, where every command whose exit is seen before its output
// hits that path: each output must still arrive whole.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { BwrapDriver } from '../../../../src/sandbox/drivers/bwrap/driver.js';
import { seccompFilter } from '../../../../src/sandbox/drivers/bwrap/seccomp.js';
import { supervisorBinary } from '../../../../src/sandbox/drivers/bwrap/supervisor/binary.js';
import { Supervisor } from '../../../../src/sandbox/drivers/bwrap/supervisor/client.js';
import type { Sandbox } from '../../../../src/sandbox/types.js';
import { describeIf } from '../../../helpers/require.js';
import { driversPresent, spec, tempRoot } from '../../helpers.js';

const present = await driversPresent();

describeIf(present.bwrap, 'supervisor output', 'bubblewrap not available')('supervisor output with no linger (bwrap)', () => {
  let tmp: Awaited<ReturnType<typeof tempRoot>>;
  let driver: BwrapDriver;
  let sb: Sandbox;
  beforeAll(async () => {
    tmp = await tempRoot();
    driver = new BwrapDriver({ sandboxesRoot: tmp.root, instanceId: 'test-linger' });
    expect(await driver.available()).toBe(true);
    // The driver's supervisor, started with a linger of 0 before the driver starts its own.
    (driver as unknown as { supervisor: Supervisor }).supervisor = new Supervisor(await supervisorBinary(), seccompFilter()!, undefined, 0);
    sb = await driver.create(spec('trace_linger'));
  });
  afterAll(async () => {
    await sb?.destroy();
    await driver?.close();
    await tmp?.cleanup();
  });

  it('relays every output of commands whose exit is seen before their output is read', async () => {
    const big = 'x'.repeat(60_000);
    const lost: string[] = [];
    for (let round = 0; round < 10; round++) {
      const runs = Array.from({ length: 20 }, async (_, i) => {
        const token = `r${round}-${i}`;
        const r = await sb.exec(i % 2 === 0 ? `echo ${token}` : `printf '%s' ${big}; echo ${token} >&2`);
        const ok = i % 2 === 0 ? r.stdout === `${token}\n` : r.stdout === big && r.stderr === `${token}\n`;
        if (!ok || r.exitCode !== 0) lost.push(`${token}: exit ${r.exitCode}, ${r.stdout.length} + ${r.stderr.length} bytes`);
      });
      await Promise.all(runs);
    }
    expect(lost).toEqual([]);
  }, 60_000);
});
