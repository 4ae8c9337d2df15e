// A file operation refused because of the workspace's own state (the rollout filled it, took a
// permission away, left a FIFO) is the model's: RFT_ERR_FILE_REFUSED (4xx, an observation it reads),
// never a 5xx that the ledger would un-begin and the trainer retry into a discarded rollout.
import { afterEach, expect, it } from 'vitest';
import { driverCases, sandboxSpec, useDriver } from '../helpers/sandboxes.js';
import { describeIf } from '../helpers/require.js';
import type { Sandbox } from '../../src/sandbox/types.js';

for (const d of driverCases.filter((c) => c.name !== 'process')) {
  describeIf(d.available, `${d.name} sandbox driver`, d.reason)(`file operations refused by the workspace's state (${d.name})`, () => {
    const ctx = useDriver(d);
    let sb: Sandbox | undefined;
    afterEach(async () => {
      await sb?.destroy();
      sb = undefined;
    });

    it('answers a write into a full workspace with RFT_ERR_FILE_REFUSED (400), not a 5xx', async () => {
      sb = await ctx.driver.create(sandboxSpec(`trace_full_${d.name}`));
      // The helpers' limits give the workspace 64 MB: fill it.
      // (each file under the 8 MB file size limit)
      const fill = await sb.exec('for i in 1 2 3 4 5 6 7 8 9; do head -c 8000000 /dev/zero > f$i || break; done; df -k .', { timeoutMs: 30_000 });
      expect(fill.stdout).toMatch(/100%/);
      await expect(sb.writeFile('more.txt', Buffer.alloc(1 << 20, 1))).rejects.toMatchObject({ code: 'RFT_ERR_FILE_REFUSED', statusCode: 400 });
    });

    it('answers a read of a FIFO the rollout left, and a write under a name too long, with a 4xx', async () => {
      sb = await ctx.driver.create(sandboxSpec(`trace_fifo_${d.name}`));
      expect((await sb.exec('mkfifo p')).exitCode).toBe(0);
      await expect(sb.readFile('p')).rejects.toMatchObject({ statusCode: expect.toSatisfy((s: number) => s >= 400 && s < 500) });
      await expect(sb.writeFile(`${'n'.repeat(300)}.txt`, 'x')).rejects.toMatchObject({ statusCode: expect.toSatisfy((s: number) => s >= 400 && s < 500) });
    });
  });
}
