// The abuse suite: hostile commands against every driver present. Each case must be contained, a
// bystander rollout's sandbox must keep answering while it runs, and destroy() must leave no
// directory, process or container behind. The process driver isolates nothing: the cases it cannot
// contain are skipped for it by name, with the reason (see docs/sandbox.md).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, lstat, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { canSwitchUid } from '../../src/sandbox/host/uids.js';
import type { ExecResult, Sandbox, SandboxDriver } from '../../src/sandbox/types.js';
import { describeIf } from '../helpers/require.js';
import { driverMatrix, driversPresent, hostView, isolates, liveProcessesOf, makeTestDriver, pidsWith, spec, tempRoot, testLimits, until } from './helpers.js';

const present = await driversPresent();
const root = canSwitchUid();

/**
 * Live processes of `uid` other than `expected` (the sandbox's own, such as bwrap's holder), once
 * they had up to 10 s to finish dying (SIGKILL is delivered asynchronously, and a loaded machine
 * may take a while to schedule the dying).
 */
async function survivorsOf(uid: number, expected: number[] = []): Promise<number[]> {
  for (const end = Date.now() + 10_000; ; ) {
    const pids = (await liveProcessesOf(uid)).filter((p) => !expected.includes(p));
    if (pids.length === 0 || Date.now() > end) return pids;
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Why a driver that isolates nothing (process) cannot contain a case, or null when it can (some only when we are root). */
function processGap(what: 'always' | 'root'): string | null {
  if (what === 'always') return 'no namespaces: it shares the host filesystem and network';
  return root ? null : 'needs root to run commands as a per-sandbox uid';
}

for (const name of driverMatrix()) {
  describeIf(present[name], `abuse suite on ${name}`, `${name} sandbox driver not available`)(`abuse suite (${name})`, () => {
    let tmp: Awaited<ReturnType<typeof tempRoot>>;
    let driver: SandboxDriver;
    let bystander: Sandbox;
    let dataDir: string;
    const gap = (what: 'always' | 'root'): string | null => (isolates(name) ? null : processGap(what));
    const title = (t: string, g: string | null): string => (g ? `${t} [not contained by the ${name} driver: ${g}]` : t);

    beforeAll(async () => {
      tmp = await tempRoot();
      driver = await makeTestDriver(name, { sandboxesRoot: tmp.root, instanceId: `abuse-${name}-${process.pid}` });
      bystander = await driver.create(spec('trace_bystander', { files: { 'secret.txt': 'bystander-secret' } }));
      // Stands for the server's data dir: a normal directory with a database-like file in it.
      dataDir = await mkdtemp(join(tmpdir(), 'rft-abuse-data-'));
      await chmod(dataDir, 0o755);
      await writeFile(join(dataDir, 'rft.sqlite'), 'server-data-secret', { mode: 0o644 });
    });
    afterAll(async () => {
      await bystander?.destroy();
      await driver?.close?.();
      await rm(dataDir, { recursive: true, force: true });
      await tmp.cleanup();
    });

    /** Runs `abuse` in a fresh sandbox while the bystander is asked to answer, then checks cleanup. */
    async function contained(abuse: (sb: Sandbox) => Promise<void>): Promise<void> {
      const sb = await driver.create(spec(`trace_victim_${Math.random().toString(36).slice(2)}`));
      const view = await hostView(sb, tmp.root);
      try {
        const [, answer] = await Promise.all([
          abuse(sb),
          new Promise((r) => setTimeout(r, 150)).then(() => bystander.exec('echo ok', { timeoutMs: 20_000 })),
        ]);
        expect(answer.stdout).toBe('ok\n');
      } finally {
        await sb.destroy();
      }
      expect(await view.gone()).toBe(true);
      if (view.uid !== null && root) expect(await survivorsOf(view.uid)).toEqual([]);
    }

    // Ended by its limit, not by outliving it: well under the 30 s and 60 s the commands below would
    // otherwise run, with room for a loaded machine (8 s and 3 s were close to what a busy engine
    // takes to start and kill an exec).
    const quick = (r: ExecResult): void => expect(r.durationMs).toBeLessThan(15_000);

    // gVisor (Debian's runsc, ptrace platform) maps each sandboxed process to host processes of its
    // own; a fork bomb can take the victim's sandbox kernel down with it (its next call answers
    // RFT_ERR_SANDBOX_ENDED_BY_ROLLOUT, the model's doing: test/sandbox/drivers/docker/lost.test.ts). The host and
    // the bystander are fine: that part runs below, the victim's own outcome is not asserted here.
    const bombGap = name === 'gvisor' ? 'the victim sandbox may be lost' : gap('root');
    it.skipIf(gap('root'))(title('a fork bomb hits the process limit and is killed whole', bombGap), async () => {
      if (name === 'gvisor') {
        await contained((sb) => sb.exec('f(){ f | f & }; f; sleep 30', { timeoutMs: 2_000 }).then(() => undefined, () => undefined));
        return;
      }
      await contained(async (sb) => {
        const r = await sb.exec('f(){ f | f & }; f; sleep 30', { timeoutMs: 2_000 });
        // Either the shell itself could no longer fork (and gave up) or the timeout killed the lot.
        expect(r.timedOut || /fork|resource temporarily unavailable/i.test(r.stderr)).toBe(true);
        quick(r);
      });
      // Under gVisor's ptrace platform the kill of thousands of traced processes and the destruction
      // of a sandbox whose kernel fell over take tens of seconds (bounded by the driver's kill bound).
    }, name === 'gvisor' ? 120_000 : undefined);

    it('a `yes` flood is cut at the output cap and stopped', async () => {
      await contained(async (sb) => {
        const r = await sb.exec('yes', { maxOutputBytes: 4096, timeoutMs: 60_000 });
        expect(r.stdoutTruncated).toBe(true);
        expect(r.stdout.length).toBe(4096);
        expect(r.timedOut).toBe(false);
        quick(r);
      });
    });

    it('an infinite loop is killed at the wall-clock timeout', async () => {
      await contained(async (sb) => {
        const r = await sb.exec('while :; do :; done', { timeoutMs: 500 });
        expect(r.timedOut).toBe(true);
        expect(r.exitCode).not.toBe(0);
        quick(r);
      });
    });

    it('a sleep past the timeout is killed at the timeout', async () => {
      await contained(async (sb) => {
        const r = await sb.exec('sleep 60; echo woke', { timeoutMs: 300 });
        expect(r.timedOut).toBe(true);
        expect(r.stdout).not.toContain('woke');
        quick(r);
      });
    });

    it('a JIT runtime starts under a small memory limit', async () => {
      const small = await driver.create(spec(`trace_node_${name}`, { limits: { ...testLimits, memoryBytes: 256 * 1024 * 1024 } }));
      try {
        const r = await small.exec(['node', '-e', 'console.log("node ok")']);
        expect(r.stdout).toBe('node ok\n');
      } finally {
        await small.destroy();
      }
    });

    // gVisor's kernel lives in the sandbox's memory cgroup: past it, the kernel is killed, not the
    // command (the victim's next call answers RFT_ERR_SANDBOX_ENDED_BY_ROLLOUT: lost.test.ts); the host and the bystander are fine.
    it(title('a memory hog fails to get its memory', name === 'gvisor' ? 'the victim sandbox may be lost' : null), async () => {
      await contained(async (sb) => {
        const hog = sb.exec(['python3', '-c', 'x = bytearray(3 * 1024 ** 3); x[::4096] = b"y" * len(x[::4096]); print("allocated")']);
        if (name === 'gvisor') return void (await hog.then(() => undefined, () => undefined));
        const r = await hog;
        expect(r.exitCode).not.toBe(0);
        expect(r.stdout).not.toContain('allocated');
        quick(r);
      });
      // A CI run took 21 s of the default 30 under gVisor (the hog, then the sandbox's removal).
    }, 120_000);

    it.skipIf(gap('root'))(title('filling the disk stops at the workspace size and the file-size limit', gap('root')), async () => {
      await contained(async (sb) => {
        const big = await sb.exec('head -c 100000000 /dev/zero > big');
        expect(big.exitCode).not.toBe(0);
        const size = await sb.exec('wc -c < big');
        expect(Number(size.stdout.trim())).toBeLessThanOrEqual(testLimits.maxFileBytes);
        const many = await sb.exec('i=0; while [ $i -lt 20 ]; do head -c 4000000 /dev/zero > f$i || break; i=$((i+1)); done; du -sk . | cut -f1');
        expect(Number(many.stdout.trim()) * 1024).toBeLessThanOrEqual(testLimits.diskBytes ?? 0);
        if (name !== 'process') {
          const t = await sb.exec('head -c 100000000 /dev/zero > /tmp/fill; du -sk /tmp | cut -f1');
          expect(Number(t.stdout.trim()) * 1024).toBeLessThanOrEqual(testLimits.diskBytes ?? 0);
        }
      });
    });

    it.skipIf(gap('root'))(title('creating files past the inode cap fails in the workspace, /tmp and /dev/shm', gap('root')), async () => {
      // Empty files cost no disk but about 1 KB of kernel memory each; a tmpfs allows millions by
      // default. Capped, the kernel memory a sandbox can pin this way is the cap times that.
      const cap = 1_000;
      // gVisor keeps /tmp and /dev/shm in its own kernel, which ignores nr_inodes: those files cost the
      // sandbox's memory (its cgroup limit bounds them), not the host kernel's. Its workspace is a host
      // tmpfs volume, capped like the others.
      const places = name === 'process' || name === 'gvisor' ? ['.'] : ['.', '/tmp', '/dev/shm'];
      const py = [
        'import errno, json, os',
        'out = {}',
        `for d in ${JSON.stringify(places)}:`,
        '    n, err = 0, None',
        '    try:',
        '        os.mkdir(os.path.join(d, "many"))', // bwrap: fails once the workspace took every inode
        `        while n < ${3 * cap}:`,
        '            open(os.path.join(d, "many", str(n)), "w").close()',
        '            n += 1',
        '    except OSError as e:',
        '        err = errno.errorcode[e.errno]',
        '    st = os.statvfs(d)',
        '    out[d] = {"created": n, "error": err, "inodes": st.f_files}',
        'print(json.dumps(out))',
      ].join('\n');
      const sb = await driver.create(spec(`trace_inodes_${name}`, { limits: { ...testLimits, inodes: cap } }));
      try {
        const r = await sb.exec(['python3', '-c', py], { timeoutMs: 60_000 });
        expect(r.exitCode, r.stderr).toBe(0);
        const got = JSON.parse(r.stdout) as Record<string, { created: number; error: string | null; inodes: number }>;
        for (const d of places) {
          expect(got[d]?.error, d).toBe('ENOSPC');
          expect(got[d]?.inodes, d).toBeLessThanOrEqual(name === 'bwrap' ? cap : cap + 1);
        }
        const total = places.reduce((n, d) => n + (got[d]?.created ?? 0), 0);
        // bwrap: one tmpfs holds all three; Docker: one each
        expect(total).toBeLessThanOrEqual(name === 'docker' ? places.length * cap : cap);
        if (name === 'bwrap' || name === 'process') {
          // and so does the host's view of the sandbox's tmpfs
          const { ws } = await hostView(sb, tmp.root);
          const host = await new Promise<string>((resolve, reject) =>
            execFile('df', ['-iP', ws], (e, out) => (e ? reject(e) : resolve(out))),
          );
          const [, inodes, used] = host.trim().split('\n')[1]?.split(/\s+/) ?? [];
          expect(Number(inodes)).toBe(cap);
          expect(Number(used)).toBeLessThanOrEqual(cap);
        }
      } finally {
        await sb.destroy();
      }
    }, 90_000);

    it.skipIf(gap('root'))(title('a daemon (setsid + nohup) does not outlive its exec', gap('root')), async () => {
      await contained(async (sb) => {
        const { uid } = await hostView(sb, tmp.root);
        // What runs as the uid between commands (bwrap: the sandbox's holder; Docker: its agent), to tell
        // from what the command leaves. Read after a first command: the Docker agent starts after create()
        // returns, and one read before it was up counted it as the daemon (CI run 14, docker).
        await sb.exec('true');
        const own = uid !== null ? await liveProcessesOf(uid) : [];
        const r = await sb.exec('setsid nohup sleep 300 >/dev/null 2>&1 & echo started');
        expect(r.stdout).toBe('started\n');
        if (uid !== null) expect(await survivorsOf(uid, own)).toEqual([]);
      });
    });

    // Issue 26, item 2 (c): a spawned long-running process (a sandboxed MCP server) made the sweep of
    // what a command left stand down (Docker, the process driver), so a daemon outlived its exec.
    it.skipIf(gap('root'))(title('a daemon does not outlive its exec while a spawned process runs in the sandbox', gap('root')), async () => {
      await contained(async (sb) => {
        const { uid } = await hostView(sb, tmp.root);
        const server = await sb.spawn(['sleep', '3001.4242']);
        try {
          // Running before anything is counted (gVisor's are not on the host: seen from inside there).
          if (name === 'gvisor') await until(async () => (await sb.exec("grep -l '3001[.]4242' /proc/[0-9]*/cmdline 2>/dev/null | wc -l")).stdout.trim() === '1');
          else await until(async () => (await pidsWith('3001.4242')).length === 1);
          const own = uid !== null ? await liveProcessesOf(uid) : [];
          const r = await sb.exec('setsid nohup sleep 3007.4242 >/dev/null 2>&1 & echo started');
          expect(r.stdout).toBe('started\n');
          if (uid !== null) expect(await survivorsOf(uid, own)).toEqual([]);
          // From inside too (gVisor's processes are not on the host); the bracket keeps the probe out of its own match.
          const inside = await sb.exec("grep -l '3007[.]4242' /proc/[0-9]*/cmdline 2>/dev/null | wc -l");
          expect(inside.stdout.trim()).toBe('0');
          // ...and the spawned process was left alone (bwrap: each exec has a pid namespace of its own, it is not seen there).
          if (name !== 'bwrap') expect((await sb.exec("grep -l '3001[.]4242' /proc/[0-9]*/cmdline 2>/dev/null | wc -l")).stdout.trim()).toBe('1');
        } finally {
          await server.kill();
        }
      });
    });

    it.skipIf(gap('always'))(title('host files (/etc/shadow, the server data dir, /root) are out of reach', gap('always')), async () => {
      await contained(async (sb) => {
        const r = await sb.exec(`cat /etc/shadow; cat ${dataDir}/rft.sqlite; ls /root`);
        expect(r.stdout).not.toContain('server-data-secret');
        expect(r.stdout).not.toMatch(/root:[^:]*:\d+:/);
        expect(r.stdout.trim()).toBe('');
      });
    });

    it('readFile, writeFile and listFiles refuse traversal and planted symlinks', async () => {
      await contained(async (sb) => {
        await sb.exec(`ln -s / hostroot; ln -s /etc/passwd pw; ln -s ${dataDir} data; mkdir d; ln -s ../../.. d/up`);
        for (const p of ['../x', '/etc/passwd', 'hostroot/etc/passwd', 'pw', 'data/rft.sqlite', 'd/up/etc/passwd', 'd/../../x']) {
          await expect(sb.readFile(p), p).rejects.toMatchObject({ code: 'RFT_ERR_PATH_ESCAPE' });
        }
        for (const p of ['../escaped', 'hostroot/tmp/escaped', 'pw', 'data/escaped', '/tmp/escaped']) {
          await expect(sb.writeFile(p, 'x'), p).rejects.toMatchObject({ code: 'RFT_ERR_PATH_ESCAPE' });
        }
        await expect(sb.listFiles('hostroot')).rejects.toMatchObject({ code: 'RFT_ERR_PATH_ESCAPE' });
        await expect(sb.listFiles('..')).rejects.toMatchObject({ code: 'RFT_ERR_PATH_ESCAPE' });
        const listed = await sb.listFiles('', { maxDepth: 5 });
        expect(listed.find((f) => f.path === 'hostroot')?.type).toBe('symlink');
        expect(listed.some((f) => f.path.startsWith('hostroot/'))).toBe(false);
        expect(existsSync(join(dataDir, 'escaped'))).toBe(false);
        expect(existsSync('/tmp/escaped')).toBe(false);
        expect(await readFile(join(dataDir, 'rft.sqlite'), 'utf8')).toBe('server-data-secret');
      });
    });

    it('copyOut copies planted symlinks as links, never what they point to', async () => {
      const out = await mkdtemp(join(tmpdir(), 'rft-abuse-copyout-'));
      try {
        await contained(async (sb) => {
          await sb.exec(`echo mine > mine.txt; ln -s ${dataDir}/rft.sqlite db; ln -s / hostroot`);
          await sb.copyOut(out);
          expect(await readFile(join(out, 'mine.txt'), 'utf8')).toBe('mine\n');
          expect((await lstat(join(out, 'db'))).isSymbolicLink()).toBe(true);
          expect((await lstat(join(out, 'hostroot'))).isSymbolicLink()).toBe(true);
        });
      } finally {
        await rm(out, { recursive: true, force: true });
      }
      expect(await readFile(join(dataDir, 'rft.sqlite'), 'utf8')).toBe('server-data-secret');
    });

    it.skipIf(gap('root'))(title("one rollout cannot read another's workspace", gap('root')), async () => {
      const theirs = (await hostView(bystander, tmp.root)).ws;
      await contained(async (sb) => {
        const r = await sb.exec(`cat ${theirs}/secret.txt; ls ${theirs}; cat ../*/ws/secret.txt ../../*/ws/secret.txt`);
        expect(r.stdout).not.toContain('bystander-secret');
        expect(r.stdout.trim()).toBe('');
      });
    });

    describe('network', () => {
      let server: Server;
      let port = 0;
      let connections = 0;
      beforeAll(async () => {
        server = createServer((s) => {
          connections++;
          s.end('hello from the host\n');
        });
        await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
        port = (server.address() as { port: number }).port;
      });
      afterAll(() => new Promise<void>((r) => server.close(() => r())));

      it.skipIf(gap('always'))(title("a connection to a listener on the host's 127.0.0.1 does not connect", gap('always')), async () => {
        await contained(async (sb) => {
          const r = await sb.exec(['python3', '-c', `import socket\ns = socket.create_connection(("127.0.0.1", ${port}), timeout=2)\nprint(s.recv(100))`]);
          expect(r.exitCode).not.toBe(0);
          expect(r.stdout).not.toContain('hello from the host');
        });
        expect(connections).toBe(0);
      });
    });
  });
}
