// The forge suite over Harbor grading (issue 40), on Docker and on gVisor: what a rollout can leave in
// its task's container (a planted reward file, a pre-written /tests/test.sh, a process that rewrites
// the reward after grading starts, links over /logs or /tests, a full /tmp, a fork bomb) scores what
// the task's tests say of the work, or 0: never the forged value, never a thrown 5xx (a discarded
// rollout) for the model's own doing. Task folders are built here, FROM an image the engine has.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { DockerDriver } from '../../src/sandbox/drivers/docker/driver.js';
import { parseDockerHosts } from '../../src/sandbox/drivers/docker/hosts.js';
import { harborSandboxImage } from '../../src/harbor/sandbox-spec.js';
import { verifyHarborTask } from '../../src/harbor/verify.js';
import { DockerApi } from '../../src/sandbox/drivers/docker/api.js';
import { errors, isRftError } from '../../src/errors.js';
import type { HarborTask } from '../../src/harbor/types.js';
import type { Sandbox } from '../../src/sandbox/types.js';
import { describeIf } from '../helpers/require.js';
import { runLabels } from '../helpers/run-label.js';
import { DOCKER_IMAGE, GVISOR_ENGINE, testLimits, until } from '../sandbox/helpers.js';
import { baseImageOn, makeTask, removeTaskImages, type TaskFolder } from './task-folders.js';

const SCOPE = 'forge';
const makeScoped = (t: TaskFolder): Promise<HarborTask> => makeTask(t, undefined, SCOPE);

const ENGINES = [
  { name: 'docker', socket: '/var/run/docker.sock', runtime: undefined },
  { name: 'gvisor', socket: GVISOR_ENGINE.replace(/^unix:\/\//, ''), runtime: 'runsc' },
] as const;

/** The honest test: 1 when /app/greeting.txt says hello, else 0 (reward.txt); writes through a heredoc (needs /tmp). */
const GREETING_TEST = `#!/bin/bash
mkdir -p /logs/verifier
cat > /tmp/expected <<'EOF'
hello harbor
EOF
if cmp -s /tmp/expected /app/greeting.txt; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
echo checked
`;

for (const eng of ENGINES) {
  const base = await baseImageOn(eng.socket);
  describeIf(base !== undefined, `Harbor grading forge suite on ${eng.name}`, `no engine at ${eng.socket} with ${'a base image'}`)(`Harbor grading forge suite on ${eng.name}`, () => {
    let driver: DockerDriver;
    let task: HarborTask;
    let jsonTask: HarborTask;
    let slowTask: HarborTask;
    let runsWorkTask: HarborTask;
    const made: Sandbox[] = [];

    beforeAll(async () => {
      driver = new DockerDriver({
        instanceId: `harbor-forge-${eng.name}-${process.pid}`,
        image: DOCKER_IMAGE,
        labels: runLabels,
        hosts: parseDockerHosts({ cap: 100, hosts: `unix://${eng.socket}` }),
        ...(eng.runtime ? { runtime: eng.runtime } : {}),
      });
      await driver.available();
      const dockerfile = `FROM ${base}\nUSER root\nWORKDIR /app\n`;
      task = await makeScoped({ name: 'greeting', dockerfile, testSh: GREETING_TEST });
      jsonTask = await makeScoped({
        name: 'components',
        dockerfile,
        testSh: `#!/bin/bash\nmkdir -p /logs/verifier\na=0; b=0\n[ -f /app/a ] && a=1\n[ -f /app/b ] && b=1\necho "{\\"a\\": $a, \\"b\\": $b, \\"c\\": 0}" > /logs/verifier/reward.json\n`,
      });
      slowTask = await makeScoped({
        name: 'slow-verifier',
        dockerfile,
        testSh: `#!/bin/bash\nmkdir -p /logs/verifier\n(sleep 300; echo 1 > /logs/verifier/reward.txt) &\nsleep 300\n`,
        config: { verifier: { timeoutSec: 2 } },
      });
      // Tests that run the rollout's own program, as a task's tests run its code.
      runsWorkTask = await makeScoped({ name: 'runs-work', dockerfile, testSh: '#!/bin/bash\nmkdir -p /logs/verifier\nsh /app/run.sh\necho 1 > /logs/verifier/reward.txt\n' });
    }, 600_000);

    afterAll(async () => {
      await Promise.all(made.map((s) => s.destroy().catch(() => {})));
      await driver?.close();
      await removeTaskImages(eng.socket, SCOPE);
    }, 120_000);

    async function rollout(t: HarborTask, id: string): Promise<Sandbox> {
      const sb = await driver.create({ traceId: `harbor_${id}`, limits: testLimits, labels: {}, image: harborSandboxImage(t) });
      made.push(sb);
      return sb;
    }

    it('an honest rollout scores what the tests say (1, then 0 without the work); components are subscores and their mean the score', async () => {
      const good = await rollout(task, 'honest');
      expect((await good.exec('pwd && id -u')).stdout).toBe('/app\n0\n');
      await good.writeFile('greeting.txt', 'hello harbor\n'); // the file tools see the workdir
      expect(await verifyHarborTask(good, task)).toMatchObject({ kind: 'scored', score: 1, file: 'reward.txt' });
      const idle = await rollout(task, 'idle');
      expect(await verifyHarborTask(idle, task)).toMatchObject({ kind: 'scored', score: 0 });
      const half = await rollout(jsonTask, 'json');
      await half.exec('touch /app/a');
      const v = await verifyHarborTask(half, jsonTask);
      expect(v).toMatchObject({ kind: 'scored', file: 'reward.json', subscores: { a: 1, b: 0, c: 0 } });
      expect(v.score).toBeCloseTo(1 / 3, 6);
    }, 300_000);

    it('the agent never sees tests/ before grading: /tests does not exist during the episode', async () => {
      const sb = await rollout(task, 'no-tests');
      // test -e, not ls: gVisor's statx answers ls with EINVAL for a missing path.
      expect((await sb.exec('test -e /tests || echo no-tests; test -e /logs/verifier || echo no-logs')).stdout).toBe('no-tests\nno-logs\n');
    }, 300_000);

    it('a planted reward.json or reward.txt is never the score (the tests\' own reward.txt is)', async () => {
      const sb = await rollout(task, 'planted');
      await sb.exec('mkdir -p /logs/verifier && echo \'{"reward": 1}\' > /logs/verifier/reward.json && echo 1 > /logs/verifier/reward.txt');
      expect(await verifyHarborTask(sb, task)).toMatchObject({ kind: 'scored', score: 0, file: 'reward.txt' });
    }, 300_000);

    it('a pre-written /tests/test.sh (and files beside it) is replaced by the task\'s tests', async () => {
      const sb = await rollout(task, 'pretests');
      await sb.exec("mkdir -p /tests && printf '#!/bin/bash\\nmkdir -p /logs/verifier; echo 1 > /logs/verifier/reward.txt\\n' > /tests/test.sh && echo x > /tests/extra && chmod -R a-w /tests");
      const v = await verifyHarborTask(sb, task);
      expect(v, v.log).toMatchObject({ kind: 'scored', score: 0 });
      expect((await sb.admin!.exec(['/bin/sh', '-c', 'for f in /tests/*; do echo "${f#/tests/}"; done'], { cwd: '/', timeoutMs: 10_000 })).stdout).toBe('test.sh\n');
    }, 300_000);

    it('a process left to rewrite the reward after grading starts is killed before the tests run', async () => {
      const sb = await rollout(task, 'rewriter');
      const proc = await sb.spawn(['/bin/sh', '-c', 'while :; do mkdir -p /logs/verifier 2>/dev/null; echo 1 > /logs/verifier/reward.txt 2>/dev/null; echo "{\\"reward\\": 1}" > /logs/verifier/reward.json 2>/dev/null; done']);
      await until(async () => (await sb.exec('cat /logs/verifier/reward.txt 2>/dev/null')).stdout === '1\n');
      expect(await verifyHarborTask(sb, task)).toMatchObject({ kind: 'scored', score: 0, file: 'reward.txt' });
      await proc.exited;
    }, 300_000);

    it('links over /logs, /logs/verifier or /tests are removed, never written through', async () => {
      for (const [i, setup] of [
        'mkdir -p /app/fake/verifier && echo 1 > /app/fake/verifier/reward.txt && rm -rf /logs && ln -s /app/fake /logs',
        'mkdir -p /logs /app/fakev && echo 1 > /app/fakev/reward.txt && rm -rf /logs/verifier && ln -s /app/fakev /logs/verifier',
        'mkdir -p /app/faket && printf "mkdir -p /logs/verifier; echo 1 > /logs/verifier/reward.txt\\n" > /app/faket/test.sh && ln -s /app/faket /tests',
      ].entries()) {
        const sb = await rollout(task, `links${i}`);
        await sb.exec(setup);
        expect(await verifyHarborTask(sb, task)).toMatchObject({ kind: 'scored', score: 0 });
        // The targets are as the rollout left them: nothing written through the links.
        const after = await sb.exec('cat /app/fake/verifier/reward.txt /app/fakev/reward.txt /app/faket/test.sh 2>/dev/null; ls /app/fake/verifier /app/fakev /app/faket 2>/dev/null');
        expect(after.stdout).not.toMatch(/^0$/m);
        expect(after.stdout).not.toMatch(/checked/);
      }
    }, 300_000);

    it('a full /tmp and a file as large as allowed in the workdir leave the verdict the tests\' (here the work was done: 1)', async () => {
      const sb = await rollout(task, 'fulldisk');
      await sb.writeFile('greeting.txt', 'hello harbor\n');
      await sb.exec('cat /dev/zero > /tmp/fill; cat /dev/zero > /app/big; i=0; while [ $i -lt 20000 ] && : > /tmp/f$i 2>/dev/null; do i=$((i+1)); done; true', { timeoutMs: 60_000 });
      // test.sh's heredoc needs /tmp, which the rollout filled: the tests fail, so the reward is what they wrote, or none (0).
      const v = await verifyHarborTask(sb, task);
      expect(v.score === 0 || v.score === 1).toBe(true);
      expect(['scored', 'model']).toContain(v.kind);
      // A full /tmp that the tests do not need: the honest score.
      const sb2 = await rollout(jsonTask, 'fulltmp');
      await sb2.exec('touch /app/a /app/b; cat /dev/zero > /tmp/fill; true', { timeoutMs: 60_000 });
      const v2 = await verifyHarborTask(sb2, jsonTask);
      expect(v2).toMatchObject({ kind: 'scored', subscores: { a: 1, b: 1, c: 0 } });
    }, 300_000);

    it('a fork bomb left running at the end is killed; the work is scored (1)', async () => {
      const sb = await rollout(task, 'forkbomb');
      await sb.writeFile('greeting.txt', 'hello harbor\n');
      await sb.spawn(['/bin/bash', '-c', 'b() { b | b & }; b']);
      await new Promise((r) => setTimeout(r, 1000)); // let it fill the process table (the condition under test)
      expect(await verifyHarborTask(sb, task)).toMatchObject({ kind: 'scored', score: 1 });
    }, 300_000);

    it('a process table held full (no exec can start) is emptied through the keeper; the work is scored (1)', async () => {
      const sb = await rollout(task, 'tablefull');
      await sb.writeFile('greeting.txt', 'hello harbor\n');
      // One loop that takes every free slot the moment it frees: the runtime refuses each exec ("try again").
      await sb.spawn(['/bin/bash', '-c', 'while :; do sleep 1000 & done 2>/dev/null']);
      await new Promise((r) => setTimeout(r, 1500));
      const started = performance.now();
      expect(await verifyHarborTask(sb, task)).toMatchObject({ kind: 'scored', score: 1 });
      expect(performance.now() - started).toBeLessThan(10_000); // before the keeper: 15 s of refused execs on gVisor (quiet), 40 s then a thrown 5xx under load
    }, 300_000);

    it('a memory hog at the end is the model\'s doing: the work\'s score, or 0 when it took the sandbox down (gVisor), never a thrown 5xx', async () => {
      const sb = await rollout(task, 'hog');
      await sb.writeFile('greeting.txt', 'hello harbor\n');
      // perl, in every Debian image: 3 GB touched, past the sandbox's memory.
      const ran = await sb.exec(['perl', '-e', '$x = "y" x (3 * 1024 ** 3); print "allocated\n"'], { timeoutMs: 40_000 }).catch((e: unknown) => e);
      const v = await verifyHarborTask(sb, task);
      if (v.kind === 'scored') expect(v.score).toBe(1);
      else expect(v, `${v.log} ${JSON.stringify(ran)}`).toMatchObject({ kind: 'model', score: 0 });
    }, 300_000);

    it('a verifier over its timeout is the model\'s 0 (VerifierTimeout), and what it left is killed', async () => {
      const sb = await rollout(slowTask, 'slow');
      const v = await verifyHarborTask(sb, slowTask);
      expect(v).toMatchObject({ kind: 'model', score: 0, reason: 'VerifierTimeout' });
      const left = await sb.admin!.exec(['/bin/sh', '-c', 'for f in /proc/[0-9]*/cmdline; do tr "\\0" " " < $f 2>/dev/null; echo; done'], { cwd: '/', timeoutMs: 10_000 });
      expect(left.stdout).toContain('rft-keeper'); // the keeper lives on (admin.ts: TASK_KEEPER)
      expect(left.stdout).not.toContain('sleep 300');
    }, 300_000);

    // A task whose user is root holds CAP_KILL over the container's init and keeper: `kill -9 -1` ends
    // the container (under gVisor `kill -9 1` too). Before, that was a lost sandbox (503, ours): a
    // rollout could end any episode as no episode instead of its 0.
    it('a root rollout that ends its own container is the model\'s 0 and its calls the model\'s 410, never a lost sandbox', async () => {
      const sb = await rollout(task, 'killall');
      await sb.writeFile('greeting.txt', 'hello harbor\n');
      const ran = await sb.exec('kill -9 -1').catch((e: unknown) => e);
      expect(isRftError(ran) && ran.code, JSON.stringify(ran)).toBe(errors.sandboxEndedByRollout.code);
      expect(await verifyHarborTask(sb, task)).toMatchObject({ kind: 'model', score: 0 });
    }, 300_000);

    /** Grading a sandbox lost to us throws the lost sandbox (503: the trainer retries or drops it), never a 0. */
    async function lostAtGrading(sb: Sandbox): Promise<void> {
      const v = await verifyHarborTask(sb, task).catch((e: unknown) => e);
      expect(isRftError(v) && v.code, JSON.stringify(v)).toBe(errors.sandboxLost.code);
    }

    /** The container's processes outside session 1 (the init's and the keeper's), but the lister's own. */
    async function leftovers(sb: Sandbox): Promise<string[]> {
      const ps = 'for d in /proc/[0-9]*; do p=${d#/proc/}; [ "$p" = $$ ] && continue; read -r l < $d/stat 2>/dev/null || continue; set -- ${l##*) }; [ "$4" = 1 ] || echo "${l%%) *})"; done; true';
      const out = await sb.admin!.exec(['/bin/sh', '-c', ps], { cwd: '/', timeoutMs: 10_000 });
      return out.stdout.split('\n').filter(Boolean);
    }

    // Under a root rollout an orphan went to the init (gVisor has no subreaper; under runc, once its
    // command killed the wrapper), and the sweep kept whatever ran under the init: it lived on after its
    // exec and could end the container between calls (gVisor: 'later' did; runc: 'orphan' did).
    it('what a root rollout\'s command leaves (a background job; a setsid daemon whose command killed its wrapper) ends with it: the container lives on and the work scores', async () => {
      for (const [id, command] of [
        ['later', '(sleep 1; kill -9 -1) >/dev/null 2>&1 & echo left'],
        ['orphan', "setsid sh -c 'sleep 1; kill -9 -1' >/dev/null 2>&1 & echo left; kill -9 $PPID"],
      ] as const) {
        const sb = await rollout(task, id);
        await sb.writeFile('greeting.txt', 'hello harbor\n');
        const ran = await sb.exec(command);
        expect(ran.stdout).toBe('left\n');
        expect(await leftovers(sb), id).toEqual([]);
        await new Promise((r) => setTimeout(r, 2500));
        expect((await sb.exec('echo alive')).stdout).toBe('alive\n');
        expect(await verifyHarborTask(sb, task)).toMatchObject({ kind: 'scored', score: 1 });
      }
    }, 300_000);

    // The keeper used to keep an idle `sleep` and start a new one whenever it ended: a root rollout
    // replaced the binary and killed the sleep, and the keeper started the rollout's program in session
    // 1, which every kill spares; it rewrote the reward after the tests (1 for undone work, measured).
    it('a root rollout gets no program of its own into the container\'s session (a replaced sleep, its sleeps killed): the tests\' 0, not the forged 1', async () => {
      const sb = await rollout(task, 'keeper');
      await sb.writeFile('forger', '#!/bin/sh\nwhile :; do if [ -f /logs/verifier/reward.txt ]; then echo 1 > /logs/verifier/.r && mv -f /logs/verifier/.r /logs/verifier/reward.txt; fi; done 2>/dev/null\n');
      await sb.exec('for b in /usr/bin/sleep /bin/sleep; do rm -f $b; cp /app/forger $b; chmod +x $b; done; for d in /proc/[0-9]*; do [ "$(cat $d/comm 2>/dev/null)" = sleep ] && kill ${d#/proc/}; done; true');
      await new Promise((r) => setTimeout(r, 500));
      const session1 = await sb.admin!.exec(['/bin/sh', '-c', 'n=0; for d in /proc/[0-9]*; do read -r l < $d/stat 2>/dev/null || continue; set -- ${l##*) }; [ "$4" = 1 ] && n=$((n+1)); done; echo $n'], { cwd: '/', timeoutMs: 10_000 });
      expect(await verifyHarborTask(sb, task)).toMatchObject({ kind: 'scored', score: 0, file: 'reward.txt' });
      expect(session1.stdout).toBe('2\n'); // the init and the keeper
    }, 300_000);

    it('a task container stopped through the engine (an operator\'s docker kill) stays ours: a lost sandbox, thrown (503)', async () => {
      const sb = await rollout(task, 'outside');
      await sb.writeFile('greeting.txt', 'hello harbor\n');
      const api = new DockerApi(eng.socket);
      await api.call('POST', `/containers/${sb.ref!.container}/kill`);
      await api.close();
      await until(async () => isRftError(await sb.exec('true').catch((e: unknown) => e)));
      await lostAtGrading(sb);
    }, 300_000);

    // Nothing a rollout starts outlives its command, so a task container that stopped while nothing ran in
    // it was stopped from outside: here its init (runc) or gVisor's sandbox process killed on the host,
    // which the engine does not log as a kill. Before, a root rollout was charged it (410, then its 0).
    it('a root task container killed on the host between calls is ours (503, thrown at grading), not the model\'s 0', async () => {
      const sb = await rollout(task, 'hostkill');
      await sb.writeFile('greeting.txt', 'hello harbor\n');
      expect((await sb.exec('echo ok')).stdout).toBe('ok\n');
      await new Promise((r) => setTimeout(r, 1500)); // past the second a death still counts as a command's
      const api = new DockerApi(eng.socket);
      const state = async (): Promise<{ Pid: number; Running: boolean }> =>
        (await api.call<{ State: { Pid: number; Running: boolean } }>('GET', `/containers/${sb.ref!.container}/json`)).body.State;
      process.kill((await state()).Pid, 'SIGKILL');
      await until(async () => !(await state()).Running); // the next call comes after the death
      await api.close();
      let first: unknown;
      await until(async () => (first = await sb.exec('true').then(() => undefined, (e: unknown) => e)) !== undefined);
      expect(isRftError(first) && first.code, JSON.stringify(first)).toBe(errors.sandboxLost.code);
      await lostAtGrading(sb);
    }, 300_000);

    it('a root rollout\'s program that ends the container while the tests run it is the model\'s 0, not a lost sandbox', async () => {
      const sb = await rollout(runsWorkTask, 'killer');
      await sb.writeFile('run.sh', 'kill -9 -1\n');
      const v = await verifyHarborTask(sb, runsWorkTask).catch((e: unknown) => e);
      expect(v, JSON.stringify(v)).toMatchObject({ kind: 'model', score: 0 });
      const honest = await rollout(runsWorkTask, 'runner');
      await honest.writeFile('run.sh', 'true\n');
      expect(await verifyHarborTask(honest, runsWorkTask)).toMatchObject({ kind: 'scored', score: 1 });
    }, 300_000);

    // Under runc a root rollout holds the same uid and capabilities as the container's init and keeper,
    // so the kernel lets it trace them or write their memory (measured: PTRACE_ATTACH and opening
    // /proc/PID/mem read-write both succeed), and a program injected there would outlive every kill
    // (docs/harbor.md: run root tasks under gVisor). gVisor refuses both: this is what that advice rests on.
    it.runIf(eng.runtime === 'runsc')('under gVisor a root rollout can neither trace nor write into the container\'s init or keeper', async () => {
      const sb = await rollout(task, 'ptrace');
      const probe = 'for d in /proc/[0-9]*; do read -r l < $d/stat 2>/dev/null || continue; set -- ${l##*) }; [ "$4" = 1 ] && echo ${d#/proc/}; done';
      const pids = (await sb.exec(probe)).stdout.split('\n').filter(Boolean);
      expect(pids.length).toBe(2); // the init and the keeper
      for (const pid of pids) {
        // x86_64: ptrace is 101, PTRACE_ATTACH 16; arm64: 117.
        const attach = await sb.exec(['perl', '-e', 'require Config; my $n = $Config::Config{archname} =~ /^aarch64/ ? 117 : 101; my $r = syscall($n, 16, $ARGV[0] + 0, 0, 0); print $r == 0 ? "attached\n" : "refused\n"', pid]);
        expect(attach.stdout, `${pid}: ${attach.stderr}`).toBe('refused\n');
        const mem = await sb.exec(['perl', '-e', 'print open(my $f, "+<", "/proc/$ARGV[0]/mem") ? "opened\n" : "refused\n"', pid]);
        expect(mem.stdout, `${pid}: ${mem.stderr}`).toBe('refused\n');
      }
    }, 300_000);

    it('a deleted bash is the model\'s 0, not a thrown error', async () => {
      const sb = await rollout(task, 'nobash');
      await sb.exec('rm -f /usr/bin/bash /bin/bash');
      expect(await verifyHarborTask(sb, task)).toMatchObject({ kind: 'model', score: 0, reason: 'VerifierToolsChanged' });
    }, 300_000);

    // A rollout as root owns the programs the verify step runs. Before, a bash that writes 1 scored 1 on
    // a task whose tests write 0 (and a head that prints 1 forged the reward's read). Now any change to
    // them, read from the engine's diff, is the model's 0; what a task installs beside them is not.
    it('a replaced or shadowed bash, head or libc is the model\'s 0 (VerifierToolsChanged), never the forged 1; a program added beside them is not', async () => {
      const forge = '#!/bin/sh\nmkdir -p /logs/verifier; echo 1 > /logs/verifier/reward.txt; echo reward.txt; echo 1\n';
      for (const [id, setup] of [
        ['fakebash', 'b=$(readlink -f /bin/bash); rm -f $b; cp /app/forge $b; chmod +x $b'],
        ['fakehead', 'b=$(readlink -f /usr/bin/head); rm -f $b; cp /app/forge $b; chmod +x $b'],
        ['shadow', 'cp /app/forge /usr/local/bin/bash; chmod +x /usr/local/bin/bash'],
        ['libc', 'l=$(readlink -f /lib/x86_64-linux-gnu/libc.so.6 2>/dev/null || readlink -f /lib/aarch64-linux-gnu/libc.so.6); cp $l /tmp/c && cat /tmp/c > /app/c && mv -f /app/c $l'],
      ] as const) {
        const sb = await rollout(task, id);
        await sb.writeFile('forge', forge);
        await sb.exec(setup).catch(() => {});
        const v = await verifyHarborTask(sb, task);
        expect(v, `${id}: ${v.log}`).toMatchObject({ kind: 'model', score: 0, reason: 'VerifierToolsChanged' });
        expect(v.log).toMatch(id === 'libc' ? /libc\.so/ : id === 'fakehead' ? /\/head\b/ : /\/bash\b/);
      }
      const sb = await rollout(task, 'installs');
      await sb.writeFile('greeting.txt', 'hello harbor\n');
      await sb.exec('cp /app/greeting.txt /usr/local/bin/greet && chmod +x /usr/local/bin/greet && mkdir -p /usr/local/lib && echo x > /usr/local/lib/libgreet.so.1');
      expect(await verifyHarborTask(sb, task)).toMatchObject({ kind: 'scored', score: 1 });
    }, 300_000);
  });
}
