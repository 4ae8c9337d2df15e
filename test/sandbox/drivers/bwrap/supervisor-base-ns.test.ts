// bubblewrap starts in a copy of the supervisor's base mount namespace, taken when the supervisor
// started. The host then held one tmpfs (source "rft-sandbox") per live sandbox of every other server
// or test worker on this host: the copy kept them all, and every bwrap of this server copied and
// scanned them under the kernel's one mount lock (hundreds in a second server's burst: both servers
// stalled up to 120 s). Staged here with a foreign sandbox tmpfs mounted on the host before the
// supervisor starts: a sandbox's bubblewrap must not see it, and must see its own.
import { execFile } from 'node:child_process';
import { mkdir, readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { BwrapDriver } from '../../../../src/sandbox/drivers/bwrap/driver.js';
import type { Sandbox } from '../../../../src/sandbox/types.js';
import { canSwitchUid } from '../../../../src/sandbox/host/uids.js';
import { describeIf } from '../../../helpers/require.js';
import { driversPresent, spec, tempRoot } from '../../helpers.js';

const run = promisify(execFile);
const present = await driversPresent();

/** Mount points of "rft-sandbox" tmpfs under `root` in each bwrap process's mount namespace. */
async function bwrapSandboxMounts(root: string): Promise<string[][]> {
  const seen: string[][] = [];
  for (const pid of await readdir('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      if ((await readFile(`/proc/${pid}/comm`, 'utf8')).trim() !== 'bwrap') continue;
      const mounts = (await readFile(`/proc/${pid}/mountinfo`, 'utf8'))
        .split('\n')
        .filter((l) => l.includes(' - tmpfs rft-sandbox '))
        .map((l) => l.split(' ')[4]!)
        .filter((m) => m.startsWith(`${root}/`));
      if (mounts.length > 0) seen.push(mounts);
    } catch {
      // gone meanwhile
    }
  }
  return seen;
}

describeIf(present.bwrap && canSwitchUid(), 'supervisor base namespace', 'bubblewrap not available or not root')('supervisor base mount namespace (bwrap)', () => {
  let tmp: Awaited<ReturnType<typeof tempRoot>>;
  let driver: BwrapDriver;
  let sb: Sandbox;
  let foreign: string;
  beforeAll(async () => {
    tmp = await tempRoot();
    foreign = join(tmp.root, 'foreign-sandbox');
    await mkdir(foreign, { recursive: true });
    // Another server's live sandbox, mounted on the host before this driver's supervisor starts.
    await run('mount', ['-t', 'tmpfs', '-o', 'size=1m,nosuid,nodev', 'rft-sandbox', foreign]);
    driver = new BwrapDriver({ sandboxesRoot: join(tmp.root, 'ours'), instanceId: 'test-base-ns' });
    expect(await driver.available()).toBe(true);
    sb = await driver.create(spec('trace_base_ns'));
  });
  afterAll(async () => {
    await sb?.destroy();
    await driver?.close();
    if (foreign) await run('umount', ['-l', foreign]).catch(() => {});
    await tmp?.cleanup();
  });

  it("leaves other servers' sandbox mounts out of the namespace bubblewrap starts in", async () => {
    expect((await sb.exec('echo ok')).stdout).toBe('ok\n');
    // Our sandbox's bubblewrap (the one namespace holding our sandbox's tmpfs, carried in) holds
    // nothing of the foreign one. Other namespaces are other processes' (other test workers').
    const ours = (await bwrapSandboxMounts(tmp.root)).filter((ms) => ms.some((m) => m.startsWith(join(tmp.root, 'ours') + '/')));
    expect(ours.length).toBe(1);
    expect(ours[0]).not.toContain(foreign);
  }, 60_000);
});
