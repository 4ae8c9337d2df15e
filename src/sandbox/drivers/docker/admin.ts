// The grader's side of a task-image container (Sandbox.admin; src/harbor/verify.ts uses it): commands
// as any user of the image with an absolute cwd, a kill of every process but the init, a folder
// uploaded to an absolute path, a user's ids. Everything goes through execs (the archive endpoints
// would write under gVisor's own view of the root filesystem), as root: the container runs as root
// and keeps CAP_KILL, CAP_CHOWN, CAP_DAC_OVERRIDE and CAP_FOWNER for this (driver.ts: why that holds;
// an exec as root gets no effective capability in a container whose own user is not root).
import { errors } from '../../../errors.js';
import { DockerStatusError, SLOW_TIMEOUT_MS } from './api.js';
import type { DockerEngine } from './engine.js';
import { dockerExec, type DockerExecOutcome } from './exec.js';
import { packWorkspace } from './tar.js';
import { BusySpans } from './busy.js';
import type { ExecResult, FsChange, SandboxAdmin } from '../../types.js';

/**
 * Stops every live process but the container's own: those of session 1, the session of its init (pid
 * 1) and of the keeper below (which starts nothing); and this shell. Every process the rollout or the
 * verifier starts comes from an exec, which the runtime starts in a session of its own (runc and
 * gVisor alike), and a process can leave its session only for a new one of its own (setsid): none can
 * join session 1. (The keeper used to be told by its age, the init's oldest child: in a container
 * just started the keeper could be missing yet, and the grader's kill then took it, and the container
 * with it, as it appeared.) Pass by pass (a stopped process cannot fork behind the walk), then kills
 * them; again until a pass finds none. Whatever their user (the container runs as root: CAP_KILL).
 * Prints 0 when all are gone, 1 when some were left. No fork: builtins only, so it runs in a full
 * process table.
 */
const KILL_ALL = `round=0; left=0
while [ $round -lt 8 ]; do
  round=$((round+1)); all=" "; pass=0
  while [ $pass -lt 32 ]; do
    pass=$((pass+1)); grew=
    for d in /proc/[0-9]*; do
      p=\${d#/proc/}
      case "\${all}$$ " in *" $p "*) continue;; esac
      read -r line 2>/dev/null < "$d/stat" || continue
      set -- \${line##*) }
      [ "$1" = Z ] && continue
      [ "$4" = 1 ] && continue
      kill -STOP "$p" 2>/dev/null && { all="$all$p "; grew=1; }
    done
    [ -z "$grew" ] && break
  done
  [ "$all" = " " ] && { left=0; break; }
  kill -KILL $all 2>/dev/null; left=1
done
echo $left`;

/**
 * A task container's main process (under docker-init), as root: an idle shell that runs KILL_ALL when
 * the engine signals it (SIGUSR1). A rollout that keeps the process table full (a fork bomb) leaves no
 * room for an exec, above all under gVisor, whose runtime then refuses every exec ("try again"); a
 * signal needs no new process. A rollout that runs as a user other than root cannot signal it; one that
 * runs as root can end it, and the container with it (DockerSandbox.endedByRollout: the rollout's
 * doing). It idles on a builtin \`read\` of its stdin, a pipe the engine holds open and never writes
 * (OpenStdin; a line a root rollout writes into it is read and dropped); a trapped signal runs its
 * trap during the read (dash, bash). It starts nothing, ever: session 1 (which KILL_ALL and the exec
 * sweep spare) is the init and this shell alone. (It used to keep an idle \`sleep\` and start a new one
 * whenever that one ended: a root rollout replaced /usr/bin/sleep, killed the sleep, and the keeper
 * started the rollout's program in session 1, out of every kill's reach, where it rewrote the reward
 * after the tests.) A stdin that ends (an engine that did not keep it open) stops the keeper, and the
 * container with it: a lost sandbox, ours, never a keeper that starts something.
 */
export const TASK_KEEPER = `rft_kill() {
rft_t=1
${KILL_ALL}
}
trap rft_kill USR1
while :; do
  rft_t=; read -r rft_l && continue
  [ -n "$rft_t" ] && continue
  echo 'rft-keeper: stdin ended (the engine must keep it open: OpenStdin)' >&2; exit 70
done`;

/** The most of the engine's list of a container's changes read (about half a million paths). */
const CHANGES_MAX_BYTES = 64 * 1024 * 1024;
/** The engine's kinds of change (GET /containers/{id}/changes). */
const CHANGE_KINDS: FsChange['kind'][] = ['changed', 'added', 'deleted'];

/** How long the grader's kill keeps trying (through the keeper when no exec can start) before it is ours. */
const KILL_DEADLINE_MS = 60_000;

/**
 * The engine's refusal to start an exec in a container that stopped after the exec was made: a 500, not
 * a 409 (measured under gVisor, a test having killed the container). Gone as a 409 is.
 */
export const NOT_RUNNING = /Container [0-9a-f]+ is not running/;

/** Attempts at a command the runtime could not start (a full process table: "try again"). */
const START_TRIES = 20;
const RUNTIME_FULL = /OCI runtime exec failed: .*(?:try again|resource temporarily unavailable)/is;

function isRuntimeFull(out: DockerExecOutcome): boolean {
  return out.exitCode === 126 && RUNTIME_FULL.test(out.stderr.toString('latin1') + out.stdout.toString('latin1'));
}

export interface DockerAdminInit {
  engine: DockerEngine;
  container: string;
  workdir: string;
}

export class DockerAdmin implements SandboxAdmin {
  private readonly idCache = new Map<string, Promise<{ uid: number; gid: number }>>();
  /** When commands ran in the container: the grader's here, the rollout's through its sandbox (which shares it). */
  readonly busy = new BusySpans();

  constructor(private readonly o: DockerAdminInit) {}

  get workdir(): string {
    return this.o.workdir;
  }

  /** One exec as `user`; a container gone or stopped is a lost sandbox (ours), a full process table is retried. */
  private async run(argv: string[], user: string, cwd: string, env: string[], stdin: string | Buffer, cap: number, abandon?: AbortSignal, tries = START_TRIES): Promise<DockerExecOutcome> {
    this.busy.enter();
    try {
      return await this.runOnce(argv, user, cwd, env, stdin, cap, abandon, tries);
    } finally {
      this.busy.leave();
    }
  }

  private async runOnce(argv: string[], user: string, cwd: string, env: string[], stdin: string | Buffer, cap: number, abandon: AbortSignal | undefined, tries: number): Promise<DockerExecOutcome> {
    for (let i = 0; ; i++) {
      let out: DockerExecOutcome;
      try {
        out = await this.o.engine.use((api) =>
          dockerExec(api, { container: this.o.container, argv, env, workingDir: cwd, user, stdin, maxOutputBytes: cap }, { stop: () => {}, ...(abandon ? { abandon } : {}) }),
        );
      } catch (e) {
        if (e instanceof DockerStatusError && (e.dockerStatus === 404 || e.dockerStatus === 409 || NOT_RUNNING.test(e.message))) throw errors.sandboxLost();
        throw e;
      }
      if (isRuntimeFull(out) && i + 1 < tries) {
        await new Promise((r) => setTimeout(r, 100 + i * 50));
        continue;
      }
      return out;
    }
  }

  async exec(argv: string[], opts: Parameters<SandboxAdmin['exec']>[1]): Promise<ExecResult> {
    const started = performance.now();
    const abandon = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      abandon.abort(new Error('timeout'));
    }, opts.timeoutMs);
    const onAbort = (): void => abandon.abort(new Error('aborted'));
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    if (opts.signal?.aborted) onAbort();
    const env = Object.entries(opts.env ?? {}).map(([k, v]) => `${k}=${v}`);
    try {
      const out = await this.run(argv, opts.user ?? '0:0', opts.cwd, env, opts.stdin ?? '', opts.maxOutputBytes ?? 1024 * 1024, abandon.signal);
      return {
        exitCode: out.exitCode,
        signal: null,
        stdout: out.stdout.toString('utf8'),
        stderr: out.stderr.toString('utf8'),
        stdoutTruncated: out.stdoutTruncated,
        stderrTruncated: out.stderrTruncated,
        timedOut: false,
        durationMs: Math.round(performance.now() - started),
      };
    } catch (e) {
      if (!abandon.signal.aborted) throw e;
      // Over its time or called off: what it started is killed (the stream was dropped, not the processes).
      await this.killAll();
      if (!timedOut) throw errors.sandboxFailed('the command was called off');
      return { exitCode: null, signal: 'SIGKILL', stdout: '', stderr: '', stdoutTruncated: false, stderrTruncated: false, timedOut: true, durationMs: Math.round(performance.now() - started) };
    } finally {
      clearTimeout(timer);
      opts.signal?.removeEventListener('abort', onAbort);
    }
  }

  async killAll(): Promise<void> {
    const deadline = performance.now() + KILL_DEADLINE_MS;
    for (let i = 0; ; i++) {
      const out = await this.run(['/bin/sh', '-c', KILL_ALL], '0:0', '/', [], '', 4096, undefined, 1);
      if (out.exitCode === 0 && out.stdout.toString().trim() === '0') return;
      if (performance.now() > deadline) break;
      // No room for an exec (the table is full): the keeper kills from inside without one.
      if (isRuntimeFull(out)) await this.o.engine.use((api) => api.call('POST', `/containers/${this.o.container}/kill?signal=SIGUSR1`, undefined, { ok: [409] }));
      await new Promise((r) => setTimeout(r, Math.min(50 * (i + 1), 500)));
    }
    throw errors.sandboxFailed(`processes of sandbox ${this.o.container} could not all be killed`);
  }

  async upload(hostDir: string, dir: string, owner: { uid: number; gid: number }): Promise<string | null> {
    const packed = await packWorkspace({ templateDir: hostDir });
    if (!packed) return null;
    const tar = Buffer.concat(await packed.stream(owner).toArray());
    return this.extract(tar, dir);
  }

  async pack(paths: string[], maxBytes: number): Promise<Buffer> {
    // Relative to /, those that exist (a link counts: -h is never given, so it is archived as a link).
    const script = 'cd / || exit 1; set --; for p in $PATHS; do if [ -e "$p" ] || [ -L "$p" ]; then set -- "$@" "$p"; fi; done; [ $# -eq 0 ] && exit 0; exec tar -c -f - -- "$@"';
    const rel = paths.map((p) => p.replace(/^\/+/, '')).filter((p) => p !== '' && !p.split('/').includes('..'));
    if (rel.length === 0) return Buffer.alloc(0);
    const out = await this.run(['/bin/sh', '-c', script], '0:0', '/', [`PATHS=${rel.join(' ')}`], '', maxBytes);
    return out.stdout;
  }

  unpack(tar: Buffer): Promise<string | null> {
    return tar.length === 0 ? Promise.resolve(null) : this.extract(tar, '/');
  }

  private async extract(tar: Buffer, dir: string): Promise<string | null> {
    const out = await this.run(['tar', '-x', '-f', '-', '--same-owner', '--no-overwrite-dir', '-C', dir], '0:0', '/', [], tar, 64 * 1024);
    return out.exitCode === 0 ? null : out.stderr.toString('utf8').slice(0, 500) || `tar exited ${out.exitCode ?? 'by a signal'}`;
  }

  /** The engine's diff of the container against its image (its writable layer, runc and gVisor alike). */
  async changes(): Promise<FsChange[] | null> {
    return this.o.engine.use(async (api) => {
      let body;
      try {
        body = (await api.stream(`/containers/${this.o.container}/changes`, SLOW_TIMEOUT_MS)).body;
      } catch (e) {
        if (e instanceof DockerStatusError && e.dockerStatus === 404) throw errors.sandboxLost();
        throw e;
      }
      const chunks: Buffer[] = [];
      let size = 0;
      for await (const chunk of body as AsyncIterable<Buffer>) {
        size += chunk.length;
        if (size > CHANGES_MAX_BYTES) {
          body.destroy();
          return null;
        }
        chunks.push(chunk);
      }
      const list = JSON.parse(Buffer.concat(chunks).toString('utf8') || 'null') as { Path?: string; Kind?: number }[] | null;
      return (list ?? []).flatMap((c) => (typeof c.Path === 'string' && CHANGE_KINDS[c.Kind ?? -1] ? [{ path: c.Path, kind: CHANGE_KINDS[c.Kind as number] as FsChange['kind'] }] : []));
    });
  }

  ids(user?: string): Promise<{ uid: number; gid: number }> {
    if (user === undefined || user === 'root' || user === '0') return Promise.resolve({ uid: 0, gid: 0 });
    let p = this.idCache.get(user);
    if (!p) {
      p = (async () => {
        const out = await this.run(['/bin/sh', '-c', 'id -u "$1" && id -g "$1"', 'rft-ids', user], '0:0', '/', [], '', 4096);
        const [uid, gid] = out.stdout.toString().trim().split('\n').map(Number);
        if (out.exitCode !== 0 || !Number.isInteger(uid) || !Number.isInteger(gid)) {
          throw errors.sandboxFailed(`user "${user}" is not a user of the task's image: ${out.stderr.toString('utf8').slice(0, 200)}`);
        }
        return { uid: uid as number, gid: gid as number };
      })();
      this.idCache.set(user, p);
      p.catch(() => this.idCache.delete(user));
    }
    return p;
  }
}
