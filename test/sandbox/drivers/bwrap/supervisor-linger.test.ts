// An exited command whose stdout something else still holds ends after the supervisor's linger (250
// ms), not later. In a bwrap sandbox only a process outside the command's own PID namespace can hold
// it: another command of the sandbox, given the descriptor over a unix socket. The supervisor made the
// command's 'x' when the linger ran out, then waited for the next event before sending it: with
// nothing else going on, the exec's timeout (its kill) was that event, and the exec came back timed
// out although its command had exited 0 at once.
import { expect, it } from 'vitest';
import { BwrapDriver } from '../../../../src/sandbox/drivers/bwrap/driver.js';
import type { SandboxProcess } from '../../../../src/sandbox/types.js';
import { describeIf } from '../../../helpers/require.js';
import { driversPresent, spec, tempRoot } from '../../helpers.js';

const present = await driversPresent();

/** Takes one descriptor per connection and holds it (and the connection) until killed; says nothing more. */
const HOLDER = `
import array, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind('hold.sock')
s.listen(8)
print('ready', flush=True)
held = []
while True:
    c, _ = s.accept()
    msg, anc, flags, addr = c.recvmsg(1, socket.CMSG_SPACE(4))
    held.append((c, anc))
    c.send(b'k')
`;

/** Hands its stdout to the holder, waits until it has it, exits 0. */
const GIVER = `
import array, socket
c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
c.connect('hold.sock')
c.sendmsg([b'x'], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array('i', [1]))])
c.recv(1)
`;

/** Resolves once `p` printed `line`; rejects if it exits first. */
function printed(p: SandboxProcess, line: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    let seen = '';
    p.stdout.on('data', (b: Buffer) => {
      seen += b.toString();
      if (seen.includes(`${line}\n`)) resolve();
    });
    void p.exited.then((e) => reject(new Error(`exited first: ${JSON.stringify(e)}`)));
  });
}

describeIf(present.bwrap, 'supervisor linger', 'bubblewrap not available')('supervisor linger (bwrap)', () => {
  it('ends a command whose stdout another process holds once the linger is over', async () => {
    const tmp = await tempRoot();
    const driver = new BwrapDriver({ sandboxesRoot: tmp.root, instanceId: 'test-linger-end' });
    const sb = await driver.create(spec('trace_linger_end'));
    try {
      const holder = await sb.spawn(['python3', '-c', HOLDER]);
      await printed(holder, 'ready');
      const r = await sb.exec(['python3', '-c', GIVER], { timeoutMs: 20_000 });
      expect({ exitCode: r.exitCode, timedOut: r.timedOut, stderr: r.stderr }).toEqual({ exitCode: 0, timedOut: false, stderr: '' });
      // The linger is 250 ms; the rest is a loaded machine's slack, far from the 20 s timeout.
      expect(r.durationMs).toBeLessThan(8_000);
    } finally {
      await sb.destroy();
      await driver.close();
      await tmp.cleanup();
    }
  }, 60_000);
});
