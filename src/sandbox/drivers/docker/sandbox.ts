// A rollout's Docker sandbox: one container on one engine, its workspace a size- and inode-capped
// tmpfs volume that lives on the engine (no host directory is shared with the server). Commands are
// execs through the Engine API as the sandbox's own uid; files go through a small in-container
// helper (files.ts) and the archive endpoints (tar.ts). Any replica can open the same
// container from its placement (engine + container name) and gets the same behaviour.
import { mkdir } from 'node:fs/promises';
import { errors } from '../../../errors.js';
import { copyBoundsFor, type CopyBounds, type CopyReport } from '../../workspace/copy-out.js';
import { DockerStatusError, QUICK_TIMEOUT_MS, type DockerApi } from './api.js';
import type { DockerEngine } from './engine.js';
import { dockerExec, dockerSpawn, PidPreamble, type DockerExecHooks, type DockerExecOutcome, type DockerExecRequest } from './exec.js';
import { fileError, FILE_SCRIPTS, parseListing } from './files.js';
import { extractArchive } from './tar.js';
import { PERL_SUBREAPER } from '../../host/reaper.js';
import { SANDBOX_PATH } from '../../host/local-sandbox.js';
import { WORKSPACE_MOUNT, workspaceComponents } from '../../workspace/paths.js';
import type { ExecOptions, ExecResult, FileEntry, PrestartedProcess, ProcessExit, Sandbox, SandboxAdmin, SandboxLimits, SandboxProcess, SandboxRef, SpawnOptions } from '../../types.js';
import type { Prestarted } from '../../pool/prestarted.js';
import { commandStdio, type Command, type CommandExit } from '../bwrap/supervisor/client.js';
import { AgentChannel, type AgentEnd } from './agent/client.js';
import { agentBinary } from './agent/binary.js';
import { keeperSignal } from './events.js';
import { BusySpans } from './busy.js';
import { NOT_RUNNING, type DockerAdmin } from './admin.js';

/**
 * `other_exec [path]`: true when another exec or spawned process of this container is running,
 * other than this shell (and `path`) and the spawned processes whose pids are in $spawned: an
 * exec's first process has its parent outside the container (PPid 0); nothing a sandboxed command
 * starts can have that. No fork: builtins only.
 */
const OTHER_EXEC = `other_exec() {
  for d in /proc/[0-9]*; do
    case " /proc/1 /proc/$$ $1 " in *" $d "*) continue;; esac
    case " $spawned " in *" \${d#/proc/} "*) continue;; esac
    while read -r k v; do
      if [ "$k" = PPid: ]; then if [ "$v" = 0 ]; then return 0; fi; break; fi
    done 2>/dev/null < "$d/status"
  done
  return 1
}
`;

/**
 * \`collect [all]\`: stops processes of the uid $u, pass by pass so nothing forks behind the walk,
 * adding them to $set: the descendants of what $set holds, or (all) every process of the uid but
 * the execs and spawned processes (PPid 0) and what runs under them, which go to $keep, and the
 * container's own, session 1 (its init; a task container's keeper), which no exec's
 * process can join (admin.ts: KILL_ALL). The init is no root of $keep: under a root rollout (the
 * init's uid) an orphan that went to the init (gVisor has no subreaper; a command that killed its
 * wrapper) is swept like any other leftover, not kept as the init's.
 * \`sweep [path]\`: unless another exec or spawned process runs (other than \`path\`), kills every
 * process of the uid outside them: what finished commands left (background jobs, setsid daemons).
 * Race-free without a lock: an exec that starts during the walk is never stopped (its wrapper has
 * PPid 0, its command runs under it), and it is seen by the second check, which then lets the
 * stopped ones go on (SIGCONT) rather than kill what its command may have started; one that starts
 * after the second check is not in $set. No fork: builtins only.
 */
const SWEEP = `${OTHER_EXEC}session() { sid=$4; }
collect() {
  pass=0
  while [ $pass -lt 16 ]; do
    pass=$((pass+1)); grew=
    for d in /proc/[0-9]*; do
      p=\${d#/proc/}
      case "$set$keep$$ " in *" $p "*) continue;; esac
      pp=; id=
      while read -r k v rest; do
        case $k in PPid:) pp=$v;; Uid:) id=$v; break;; esac
      done 2>/dev/null < "$d/status"
      [ "$id" = "$u" ] || continue
      if [ "$1" = all ]; then
        read -r st 2>/dev/null < "$d/stat" || continue
        session \${st##*) }
        [ "$sid" = 1 ] && continue
        case "$keep" in *" $pp "*) keep="$keep$p "; grew=1; continue;; esac
        if [ "$pp" = 0 ]; then keep="$keep$p "; grew=1; continue; fi
      else case "$set" in *" $pp "*) ;; *) continue;; esac; fi
      kill -STOP "$p" 2>/dev/null; set="$set$p "; grew=1
    done
    if [ -z "$grew" ]; then break; fi
  done
}
sweep() {
  if other_exec $1; then return; fi
  set=" "; keep=" "; collect all
  [ "$set" = " " ] && return
  if other_exec $1; then kill -CONT $set 2>/dev/null; else kill -KILL $set 2>/dev/null; fi
}
`;

/**
 * Every exec: prints its pid for a kill (PidPreamble), runs the command ("$@"), then sweeps (see
 * SWEEP): unless another exec or spawned process of this container is running, every process of
 * the sandbox uid that is left is killed: background jobs, \`setsid\` daemons. So nothing outlives
 * its exec, as with bwrap, without a second round trip to the engine. \`kill -0 -1\` first: with
 * nothing left (the usual case) there is no /proc walk at all. Never \`kill -1\`: that would take
 * an exec starting after the check (its wrapper, then its command: exit 137 for an \`echo\`).
 */
export const EXEC_WRAPPER = `${SWEEP}spawned=$1; shift; printf 'rft-pid %s\\n' $$ >&2
"$@"; rc=$?
if kill -0 -1 2>/dev/null; then
  while read -r k v rest; do case $k in Uid:) u=$v; break;; esac; done 2>/dev/null < /proc/$$/status
  set=" $$ "; keep=" "; collect; kill -KILL \${set# $$ } 2>/dev/null
  sweep
fi
exit $rc`;

/**
 * Runs the exec wrapper as a child subreaper (prctl PR_SET_CHILD_SUBREAPER, kept across execve):
 * what its command leaves (background jobs, \`setsid\` daemons, double forks) is re-parented to the
 * wrapper instead of the container's init, so it stays in the wrapper's tree, told apart from every
 * other process of the sandbox uid (a spawned MCP server's, another exec's), and the wrapper kills
 * that tree whatever else runs; the sweep that follows can only take what has no owner, so it stands
 * down while others run. perl, because it is in every Debian image (perl-base is essential) and
 * reaches prctl by number; an image without it runs the wrapper without the subreaper, as before.
 */
const SUBREAPER = `${PERL_SUBREAPER} exec { $ARGV[0] } @ARGV or exit 127;`;
const LAUNCH = 'p=$1; shift; if command -v perl >/dev/null 2>&1; then exec perl -e "$p" "$@"; fi; exec "$@"';

/** A spawned process (or an exec with a result channel): its pid first, then the program itself in its place. */
const SPAWN_WRAPPER = `printf 'rft-pid %s\\n' $$ >&2; exec "$@"`;

/**
 * Kills processes of the sandbox uid $1, run as that uid (the init, another uid, is never touched).
 * $2 = tree: pid $3 and its descendants (a spawned process);
 * under: the descendants of $3 (an exec's command, under its wrapper, which then exits), then a
 * sweep that leaves $3 out (setsid'd orphans); all: a sweep (see SWEEP: never while another exec
 * or spawned process runs, of this replica or another). Stopped, then killed. No fork.
 */
const KILL_SCRIPT = `${SWEEP}u=$1; mode=$2; r=\${3:-0}
case $mode in
  tree) set=" $r "; keep=" "; collect; kill -KILL $set 2>/dev/null ;;
  under) set=" $r "; keep=" "; collect; kill -KILL \${set# $r } 2>/dev/null; sweep /proc/$r ;;
  all) sweep ;;
esac`;

/** Longest a kill script may take (it walks /proc: quick, unless the engine or the sandbox is stuck). */
const KILL_TIMEOUT_MS = 10_000;
/** After a kill, how long the command's stream may stay open before it is given up on. */
const KILL_GRACE_MS = 5_000;
/** The reason an exec's stream is dropped after a kill that did not end it. */
const GIVEN_UP = new Error('the killed command did not end');
/**
 * The reason an exec's stream is dropped when the engine reports its container dead: gVisor keeps
 * it open after a memory hog got the sandbox's kernel killed (the call would end only at its timeout
 * and the give-up); what the death was is then lost()'s to say.
 */
const DIED = new Error('the container died under the command');
/** How close to a container's death the engine's \`oom\` event must be to blame the rollout's commands (s). */
const OOM_WINDOW_S = 3;
/** How long the engine may take to report a container stopped after its runtime refused an exec as stopped. */
const STOP_SETTLE_MS = 5_000;
/** The OCI runtime's refusal of an exec into a container that is stopping (runc's words, then runsc's). */
export const STOPPED_STATE = /cannot exec in a stopped state|cannot execute in container "?[0-9a-f]*"? in state stopped/;

/**
 * The runtime could not start a new process in the sandbox: its process limit is full (runsc answers
 * EAGAIN, "try again", while a fork bomb's processes fill it). Recognised only on an exec whose
 * wrapper never ran (exit 126, no pid line), so a command cannot print its way into it.
 */
export const PROCESS_LIMIT_FULL = /OCI runtime exec failed: .*(?:try again|resource temporarily unavailable)/is;
/** What the model reads then, instead of the runtime's message (which quotes our exec wrapper). */
export const PROCESS_LIMIT_MESSAGE = "the command could not start: the sandbox's process limit is full (this rollout's own processes fill it)\n";
/** Output cap for a directory listing (find's records). */
const LIST_CAP = 16 * 1024 * 1024;

export interface DockerSandboxInit {
  id: string;
  traceId: string;
  engine: DockerEngine;
  /** Container name (rft-<id>): what the placement records and the API accepts. */
  container: string;
  uid: number;
  limits: SandboxLimits;
  /** Called once the container is removed (or its removal was attempted). */
  onDestroy?: () => void;
  /**
   * The warm container's own sandbox, which started `prestarted` while pooled: its spawned processes
   * become this one's (an exec's sweep knows them as this replica's servers, destroy() waits for them).
   */
  from?: DockerSandbox;
  /** What the warm container started for its rollout (SandboxSpec.prestarts). */
  prestarted?: Prestarted;
  /**
   * Calls go through the in-container agent (agent/), execs only as its fallback: started at once
   * (eager: a new rollout's), or at the first call (lazy, the default: a sandbox opened by another
   * replica); false: execs only.
   */
  agent?: 'eager' | 'lazy' | false;
  /** The agent the warm pool started in the container while it was pooled (its channel, open): taken over. */
  agentChannel?: AgentChannel;
  /** Under gVisor (runtime runsc) only RLIMIT_AS binds a process's memory (Sandbox.memoryRlimit). */
  gvisor?: boolean;
  /**
   * A task-image container (SandboxSpec.image, driver.ts): its commands run as the task's user
   * ("uid:gid"; `uid` is that uid) in its workdir, with the image's env, and its grader has `admin`.
   */
  task?: { user: string; workdir: string; admin: DockerAdmin };
}

export class DockerSandbox implements Sandbox {
  readonly driver = 'docker' as const;
  readonly id: string;
  readonly traceId: string;
  readonly ref: SandboxRef;
  private inflight = 0;
  /** Live spawned processes (destroy() waits for them to be gone). */
  private readonly processes: Set<SandboxProcess>;
  /** This replica's spawned processes (stdio MCP servers) and their pid lines. */
  private readonly spawned: Map<SandboxProcess, PidPreamble>;
  /**
   * The container stopped or vanished: every further call answers RFT_ERR_SANDBOX_LOST (ours), or
   * RFT_ERR_SANDBOX_ENDED_BY_ROLLOUT when the rollout's own commands took it down (see lost()).
   */
  private gone: false | 'ours' | 'rollout' = false;
  /** When commands ran in the container: this sandbox's, and a task container's grader's (its admin's). */
  private readonly busy: BusySpans;
  private destroying: Promise<void> | null = null;
  /** The classification of a container found gone (lost()), once. */
  private losing: Promise<void> | null = null;
  /** The agent's channel, once asked for (null inside: this sandbox runs on execs). */
  private agent: Promise<AgentChannel | null> | null = null;
  /** The engine's event stream breaks when this sandbox was made (endedByRollout: none since, or events were missed). */
  private readonly breaksAtStart: number;

  constructor(private readonly o: DockerSandboxInit) {
    this.id = o.id;
    this.traceId = o.traceId;
    this.ref = { engine: o.engine.name, container: o.container };
    this.breaksAtStart = o.engine.events.breaks;
    this.busy = o.task?.admin.busy ?? new BusySpans();
    // Shared, not copied: a process the pooled one spawned drops out of both when it exits.
    this.processes = o.from?.processes ?? new Set();
    this.spawned = o.from?.spawned ?? new Map();
    if (o.agent !== false && o.agentChannel?.open) this.agent = Promise.resolve(this.adopt(o.agentChannel));
    else if (o.agent === 'eager') void this.channel();
  }

  get container(): string {
    return this.o.container;
  }

  get memoryRlimit(): 'data' | 'address-space' {
    return this.o.gvisor ? 'address-space' : 'data';
  }

  /** The engine that holds it. */
  get engine(): DockerEngine {
    return this.o.engine;
  }

  private get user(): string {
    return this.o.task?.user ?? `${this.o.uid}:${this.o.uid}`;
  }

  /** Where commands and file paths start: the workspace volume, or a task image's workdir. */
  private get root(): string {
    return this.o.task ? this.o.task.workdir.replace(/\/+$/, '') : WORKSPACE_MOUNT;
  }

  /** The grader's operations of a task-image container (Sandbox.admin). */
  get admin(): SandboxAdmin | undefined {
    return this.o.task?.admin;
  }

  private env(extra: Record<string, string> = {}): string[] {
    // A task image's commands keep the image's env (the container's, which every exec inherits).
    const base = this.o.task ? {} : { PATH: SANDBOX_PATH, HOME: WORKSPACE_MOUNT, LANG: 'C.UTF-8', TMPDIR: '/tmp' };
    return Object.entries({ ...base, ...extra }).map(([k, v]) => `${k}=${v}`);
  }

  /** Kills processes of the sandbox uid (see KILL_SCRIPT); never throws. */
  private async kill(mode: 'tree' | 'under' | 'all', pid?: number): Promise<void> {
    await this.driverExec(['/bin/sh', '-c', KILL_SCRIPT, 'rft-kill', String(this.o.uid), mode, ...(pid !== undefined ? [String(pid)] : [])]);
  }

  /** A short command of the driver's own in the container, as the sandbox uid, from `/`; null when it could not run. */
  private driverExec(argv: string[]): Promise<DockerExecOutcome | null> {
    const req = { container: this.o.container, argv, env: [], workingDir: '/', user: this.user, stdin: '', maxOutputBytes: 1024 };
    return this.o.engine.use((api) => dockerExec(api, req, { stop: () => {}, abandon: AbortSignal.timeout(KILL_TIMEOUT_MS) })).catch(() => null);
  }

  /**
   * A killed command's stream stayed open: the engine does not answer (ENGINE_DOWN), the container
   * died under it (LOST: gVisor's kernel can go down under a fork bomb), or the kill did not take
   * (the command is reported killed, with what it printed lost).
   */
  private async givenUp(): Promise<void> {
    if (!(await this.o.engine.check('a killed command never ended'))) throw errors.sandboxEngineDown();
    if (!(await this.running())) throw await this.lost();
  }

  /**
   * Kills an exec's command: the tree under its wrapper (its pid comes first thing on stderr: a
   * command stopped before it started is killed as soon as it does), and, when no other exec or
   * spawned process runs, everything of the uid; with a result channel, the command's own tree.
   */
  private async killExec(preamble: PidPreamble, mode: 'under' | 'tree'): Promise<void> {
    const pid = await preamble.wait();
    if (pid !== null) await this.kill(mode, pid);
  }

  /**
   * After a refused exec (409): the container stopped (killed from outside, the engine restarted).
   * Its tmpfs workspace went with it, so it is not restarted: running the rest of the rollout in an
   * empty workspace would train on a broken episode. The container is removed and every call of the
   * rollout answers RFT_ERR_SANDBOX_LOST (503), which makes the trainer drop the rollout.
   */
  private lost(): Promise<Error> {
    // Once per sandbox: parallel calls that find it gone share the first one's classification (a
    // second one read after the removal would find no container and call it ours).
    this.losing ??= (async () => {
      const byRollout = await this.endedByRollout().catch(() => false);
      await this.o.engine
        .use((api) => api.removeContainer(this.o.container))
        .catch(() => {});
      this.gone = byRollout ? 'rollout' : 'ours';
    })();
    return this.losing.then(() => this.goneError());
  }

  /** Whether a command or spawned process of this sandbox was running at time t (ms), per the recent busy spans. */
  private busyAt(t: number): boolean {
    return this.processes.size > 0 || this.busy.at(t);
  }

  private goneError(): Error {
    return this.gone === 'rollout' ? errors.sandboxEndedByRollout() : errors.sandboxLost();
  }

  /**
   * Whether the stopped container was taken down by the rollout's own commands: the engine reported
   * an \`oom\` for it within seconds of its \`die\` (seen on the engine's event stream as it happened,
   * or, when this process was not watching then, still in the engine's bounded event log). Only the
   * rollout's commands allocate in the container's memory cgroup (its init and \`sleep\` are a few
   * hundred KB): under runc the kernel then kills the biggest of them and the container lives on;
   * under gVisor the sandbox's kernel is killed, and the container with it. A container removed
   * (404) or killed from outside, or stopped by an engine restart, has no such event: ours
   * (RFT_ERR_SANDBOX_LOST, 503, uncharged).
   * A task container whose rollout runs as root: its commands hold CAP_KILL over the container's
   * init and keeper (gVisor delivers even SIGKILL to pid 1 from inside; runc ends the container
   * when the init's one child, the keeper, dies), so `kill -9 -1` ends it. Such a container that
   * stopped while a command ran in it (the rollout's, or the grader's running the rollout's code;
   * nothing the rollout starts outlives its command), with no kill through the engine (an operator's
   * docker kill, stop or rm -f and the engine's own shutdown each log one: seen on the stream, or in
   * the engine's log since its start) and no break in the stream since this sandbox was made (an
   * engine restart), was stopped by the rollout. (Before, it was a lost sandbox, 503: a rollout could
   * turn its episode into no episode.) One that stopped between commands was stopped from outside
   * (its init or runtime killed on the host, which the engine does not log): ours.
   */
  private async endedByRollout(): Promise<boolean> {
    return this.o.engine.use(async (api) => {
      const info = await api.call<{ State?: { Running?: boolean; StartedAt?: string; FinishedAt?: string; ExitCode?: number }; HostConfig?: { Runtime?: string } }>(
        'GET',
        `/containers/${this.o.container}/json`,
        undefined,
        { ok: [404] },
      );
      if (info.status === 404 || info.body.State?.Running !== false) return false;
      const died = Date.parse(info.body.State.FinishedAt ?? '');
      if (!Number.isFinite(died)) return false;
      // gVisor: the sandbox's kernel itself failed (runsc exits with its own status, not by a
      // signal; measured: a fork bomb ends it with status 2 and no oom event) while a command of
      // the rollout ran. Nothing else runs in it: the load was the rollout's.
      const code = info.body.State.ExitCode ?? 0;
      if (info.body.HostConfig?.Runtime === 'runsc' && code > 0 && code < 128 && this.busyAt(died)) return true;
      // The oom event follows the die by milliseconds. Classified tens of seconds later (a gVisor
      // hog's call stays open until its timeout and the give-up), the engine's log may have dropped
      // it under other rollouts' execs: the stream kept it.
      const oomNear = (): boolean => {
        const at = this.o.engine.events.oomAt(this.o.container);
        return at !== undefined && Math.abs(at - died) <= OOM_WINDOW_S * 1000;
      };
      if (oomNear()) return true;
      // Not seen (yet, or not watching then): the engine's log, whose window ends a few seconds after
      // the death (the engine answers once it has passed).
      const since = Math.floor(died / 1000) - OOM_WINDOW_S;
      const until = Math.floor(died / 1000) + OOM_WINDOW_S;
      const text = await this.engineLog(api, ['oom'], since, until);
      if (/"(Action|status)":"oom"/.test(text) || oomNear()) return true;
      // Only while something ran in it: nothing the rollout starts outlives its command (the sweep), so a
      // container that stopped between calls was stopped from outside (a kill of its init or runtime on
      // the host, which the engine does not log): ours.
      return this.rootRollout && this.busyAt(died) && (await this.stoppedFromInside(api, info.body.State.StartedAt, died));
    });
  }

  /** A task container whose commands run as root (see endedByRollout). */
  private get rootRollout(): boolean {
    return this.o.task !== undefined && this.o.uid === 0;
  }

  /** No kill through the engine from its start to its death, and the engine's events all seen since this sandbox was made. */
  private async stoppedFromInside(api: DockerApi, startedAt: string | undefined, died: number): Promise<boolean> {
    const events = this.o.engine.events;
    if (!events.isOpen || events.breaks !== this.breaksAtStart) return false;
    if (events.killedAt(this.o.container) !== undefined) return false;
    const started = Date.parse(startedAt ?? '');
    if (!Number.isFinite(started)) return false;
    const text = await this.engineLog(api, ['kill', 'stop'], Math.floor(started / 1000) - 1, Math.floor(died / 1000) + OOM_WINDOW_S);
    const stopped = text.split('\n').some((line) => {
      try {
        const ev = JSON.parse(line) as { Action?: string; Actor?: { Attributes?: Record<string, string> } } | null;
        if (ev === null || typeof ev !== 'object') return false;
        return ev.Action === 'stop' || (ev.Action === 'kill' && !keeperSignal(ev.Actor?.Attributes?.signal));
      } catch {
        return line.trim() !== '';
      }
    });
    // (the stream again: a kill it carried while the log was read)
    return !stopped && events.killedAt(this.o.container) === undefined;
  }

  /**
   * The engine's bounded log of `actions` for this container between two times (s), as its text. The
   * engine answers once `until` has passed.
   */
  private async engineLog(api: DockerApi, actions: string[], since: number, until: number): Promise<string> {
    const filters = encodeURIComponent(JSON.stringify({ type: ['container'], event: actions, container: [this.o.container] }));
    const res = await api.call<unknown>('GET', `/events?since=${since}&until=${until}&filters=${filters}`, undefined, { timeoutMs: QUICK_TIMEOUT_MS + OOM_WINDOW_S * 1000 });
    return typeof res.body === 'string' ? res.body : JSON.stringify(res.body ?? '');
  }

  /**
   * The agent's channel (agent/), started on first use: the driver asks right after creating the
   * sandbox, so it is up before the rollout's first call. Null when this sandbox runs on execs: the
   * agent is turned off, or could not start (no perl in the image, no static C library on this
   * machine, an engine that refused); the exec path then serves every call, as it did before.
   */
  channel(): Promise<AgentChannel | null> {
    if (this.o.agent === false || this.gone || this.destroying) return Promise.resolve(null);
    this.agent ??= this.startAgent();
    return this.agent;
  }

  private async startAgent(): Promise<AgentChannel | null> {
    try {
      return this.adopt(await AgentChannel.start(this.o.engine, this.o.container, this.user, await agentBinary()));
    } catch {
      return null;
    }
  }

  /** The agent's channel becomes this sandbox's: its end is classified here. */
  private adopt(ch: AgentChannel): AgentChannel {
    // gVisor keeps an exec's stream open after the sandbox's kernel was killed (a memory hog): the
    // container's death, seen on the engine's event stream, ends the channel (see exec()).
    const unwatch = this.o.engine.events.onDeath(this.o.container, () => ch.drop());
    void ch.ended.then((end) => {
      unwatch();
      return this.agentEnded(ch, end);
    });
    return ch;
  }

  /**
   * The agent's stream closed; every call on it gets what that means. The sandbox destroyed: its
   * calls fail as destroyed. The container gone: lost() (ours, or the rollout's when its memory took
   * it down). The agent killed while its container runs (its exec ended by a signal): only the
   * rollout's processes can signal it (they share its uid), and only their memory or processes make
   * the kernel kill it, so the rollout ended its own channel: RFT_ERR_SANDBOX_ENDED_BY_ROLLOUT
   * (410) for this call and every later one, as for a container its memory took down. An agent that
   * exited 0 (its stdin closed: our connection to the engine dropped) or of which the engine says
   * nothing: ours (interrupted, 503), and the next call starts a new agent.
   */
  private async agentEnded(ch: AgentChannel, end: AgentEnd): Promise<void> {
    let reason: Error;
    if (this.destroying) reason = errors.sandboxFailed(`sandbox ${this.id} was destroyed`);
    // Whether the container died (runs no `true` and is then found stopped): the engine may still
    // report it running for a moment after a kill from outside, which is ours, never the rollout's.
    else if (await this.diedUnder()) reason = await this.lost();
    else if (end.exitCode !== null && end.exitCode !== 0) reason = await this.endedByItsRollout();
    else {
      reason = errors.sandboxInterrupted();
      if (this.agent) this.agent = null;
    }
    ch.fail(reason);
  }

  /** The rollout ended its own channel: removed, and every call answers RFT_ERR_SANDBOX_ENDED_BY_ROLLOUT. */
  private async endedByItsRollout(): Promise<Error> {
    this.losing ??= (async () => {
      this.gone = 'rollout';
      await this.o.engine.use((api) => api.removeContainer(this.o.container)).catch(() => {});
    })();
    await this.losing;
    return this.goneError();
  }

  /**
   * A killed command's end did not come: the agent does not answer. Stopped or gone while its
   * container runs: only the rollout's own processes can do that to it (the rollout's, see
   * agentEnded). Else the engine or the container is at fault (givenUp), or it is ours.
   */
  private async agentStuck(ch: AgentChannel): Promise<Error> {
    const out = await this.driverExec(['cat', `/proc/${ch.pid}/stat`]);
    const state = /\) (\S)/.exec(out?.stdout.toString('latin1') ?? '')?.[1];
    let reason: Error;
    if (out !== null && (out.exitCode !== 0 || state === 'T' || state === 't')) reason = await this.endedByItsRollout();
    else {
      try {
        await this.givenUp();
        reason = errors.sandboxInterrupted();
        this.agent = null;
      } catch (e) {
        reason = e instanceof Error ? e : errors.sandboxInterrupted();
      }
    }
    ch.fail(reason);
    return reason;
  }



  /** Starts a command on the agent, as the sandbox uid, from a workspace directory. */
  private runOnAgent(ch: AgentChannel, argv: string[], o: { cwd: string[]; env?: Record<string, string>; stdin?: string | Buffer; resultChannel?: boolean; streamed?: boolean; cap: number }): Command {
    return ch.run({
      cwd: [this.root, ...o.cwd].join('/') || '/',
      limits: '', // the container's own (driver.ts: Ulimits)
      argv,
      env: this.env(o.resultChannel ? { ...o.env, RFT_RESULT_FD: '3' } : o.env),
      cap: o.cap,
      ...(o.stdin !== undefined ? { stdin: o.stdin } : {}),
      ...(o.resultChannel ? { resultChannel: true } : {}),
      ...(o.streamed ? { streamed: true } : {}),
    });
  }

  /**
   * A failure the agent reports instead of an exit: its fork refused for want of processes (the
   * rollout's own fill the sandbox's limit: the model's, as PROCESS_LIMIT_MESSAGE), else ours.
   */
  private agentFailure(f: string): Error | null {
    if (/^setup fork: (Resource temporarily unavailable|Try again)/i.test(f)) return null;
    return errors.sandboxFailed(`sandbox agent: ${f}`);
  }

  /** exec() over the agent: the same guarantees, no engine call (see agent/agent.c). */
  private async execOnAgent(ch: AgentChannel, argv: string[], opts: ExecOptions): Promise<ExecResult> {
    const { result, ...r } = await this.onAgent(ch, argv, opts);
    return {
      ...r,
      stdout: r.stdout.toString('utf8'),
      stderr: r.stderr.toString('utf8'),
      ...(opts.resultChannel === true ? { result: result.toString('utf8') } : {}),
    };
  }

  private async onAgent(
    ch: AgentChannel,
    argv: string[],
    opts: ExecOptions,
  ): Promise<Omit<ExecResult, 'stdout' | 'stderr' | 'result'> & { stdout: Buffer; stderr: Buffer; result: Buffer }> {
    const started = performance.now();
    const channel = opts.resultChannel === true;
    const cmd = this.runOnAgent(ch, argv, {
      cwd: workspaceComponents(opts.cwd ?? ''),
      ...(opts.env ? { env: opts.env } : {}),
      stdin: opts.stdin ?? '',
      resultChannel: channel,
      cap: opts.maxOutputBytes ?? this.o.limits.maxOutputBytes,
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    const res: Buffer[] = [];
    cmd.onData((stream, data) => (stream === 'stdout' ? out : stream === 'stderr' ? err : res).push(data));
    let timedOut = false;
    let killed = false;
    let grace: NodeJS.Timeout | undefined;
    let stuck!: (e: unknown) => void;
    const givenUp = new Promise<never>((_, reject) => (stuck = reject));
    givenUp.catch(() => {});
    const stop = (): void => {
      if (killed) return;
      killed = true;
      cmd.kill();
      // The kill ends it at once; an agent that does not answer must not hold the call.
      grace = setTimeout(() => void this.agentStuck(ch).then(stuck, stuck), KILL_TIMEOUT_MS + KILL_GRACE_MS);
    };
    const timer = setTimeout(() => {
      timedOut = true;
      stop();
    }, opts.timeoutMs ?? this.o.limits.wallTimeoutMs);
    opts.signal?.addEventListener('abort', stop, { once: true });
    if (opts.signal?.aborted) stop();
    this.inflight++;
    this.busy.enter();
    try {
      const exit: CommandExit = await Promise.race([cmd.exited, givenUp]);
      const durationMs = Math.round((performance.now() - started) * 10) / 10;
      if (exit.failure) {
        const e = this.agentFailure(exit.failure);
        if (e) throw e;
        const none = Buffer.alloc(0);
        return { exitCode: 126, signal: null, stdout: none, stderr: Buffer.from(PROCESS_LIMIT_MESSAGE), result: none, stdoutTruncated: false, stderrTruncated: false, timedOut, durationMs };
      }
      // Ended by a signal that was not ours: its container may have died under it (gVisor's kernel
      // taken down by the rollout's hog), and then the end is the sandbox's (see exec()).
      if (!killed && (exit.signal !== null || (exit.exitCode ?? 0) >= 128) && (await this.diedUnder())) throw await this.lost();
      return {
        exitCode: exit.exitCode,
        signal: exit.signal,
        stdout: Buffer.concat(out),
        stderr: Buffer.concat(err),
        result: Buffer.concat(res),
        stdoutTruncated: exit.truncated.stdout,
        stderrTruncated: exit.truncated.stderr,
        timedOut,
        durationMs,
      };
    } finally {
      this.inflight--;
      this.busy.leave();
      clearTimeout(timer);
      clearTimeout(grace);
      opts.signal?.removeEventListener('abort', stop);
    }
  }

  /** spawn() over the agent: streamed stdio, killed with its whole tree, ended with its sandbox. */
  private spawnOnAgent(ch: AgentChannel, argv: string[], opts: SpawnOptions): SandboxProcess {
    const cmd = this.runOnAgent(ch, argv, { cwd: workspaceComponents(opts.cwd ?? ''), ...(opts.env ? { env: opts.env } : {}), streamed: true, cap: 0 });
    const { stdin, stdout, stderr } = commandStdio(cmd);
    // The channel's end is the sandbox's (agentEnded): kept for endedBySandbox, not the process's doing.
    let lost: Error | undefined;
    let killed = false;
    const exited = cmd.exited.then(
      (e): ProcessExit => {
        if (e.failure) lost = this.agentFailure(e.failure) ?? undefined;
        // A kill as the exec path reports it (dockerSpawn): 137 is SIGKILL, whoever sent it.
        if (e.failure || e.exitCode === 137) return { exitCode: null, signal: 'SIGKILL' };
        return { exitCode: e.exitCode, signal: e.signal };
      },
      (e: unknown): ProcessExit => {
        lost = e instanceof Error ? e : errors.sandboxInterrupted();
        return { exitCode: null, signal: 'SIGKILL' };
      },
    );
    let why: Promise<Error | undefined> | undefined;
    const proc: SandboxProcess = {
      stdin,
      stdout,
      stderr,
      exited,
      endedBySandbox: () =>
        (why ??= exited.then(async () => lost ?? (killed || this.destroying || !(await this.diedUnder()) ? undefined : this.lost()))),
      kill: async () => {
        killed = true;
        cmd.kill();
        let timer: NodeJS.Timeout | undefined;
        const late = new Promise<'late'>((r) => (timer = setTimeout(() => r('late'), KILL_TIMEOUT_MS)));
        if ((await Promise.race([exited, late])) === 'late') await this.agentStuck(ch);
        clearTimeout(timer);
        await exited;
      },
    };
    this.processes.add(proc);
    void exited.then(() => {
      stdout.end();
      stderr.end();
      this.processes.delete(proc);
    });
    return proc;
  }

  async exec(command: string | string[], opts: ExecOptions = {}): Promise<ExecResult> {
    if (this.destroying) throw errors.sandboxFailed(`sandbox ${this.id} was destroyed`);
    const argv = typeof command === 'string' ? ['/bin/sh', '-c', command] : command;
    const ch = await this.channel();
    if (this.gone) throw this.goneError();
    if (ch) return this.execOnAgent(ch, argv, opts);
    const cwd = workspaceComponents(opts.cwd ?? '');
    const timeoutMs = opts.timeoutMs ?? this.o.limits.wallTimeoutMs;
    const started = performance.now();
    let timedOut = false;
    let kill: Promise<void> | null = null;
    const abandon = new AbortController();
    let grace: NodeJS.Timeout | undefined;
    const preamble = new PidPreamble();
    // With a result channel (the exec's stdout), the command takes the wrapper's place (exec) so
    // that no other process holds the channel; a kill then takes the command's whole tree.
    const channel = opts.resultChannel === true;
    const stop = (): void => {
      if (kill) return;
      kill = this.killExec(preamble, channel ? 'tree' : 'under');
      // The kill normally ends the stream at once; a stuck engine or sandbox must not hold the call.
      grace = setTimeout(() => abandon.abort(GIVEN_UP), KILL_TIMEOUT_MS + KILL_GRACE_MS);
      grace.unref();
    };
    const timer = setTimeout(() => {
      timedOut = true;
      stop();
    }, timeoutMs);
    opts.signal?.addEventListener('abort', stop, { once: true });
    if (opts.signal?.aborted) stop();
    const unwatch = this.o.engine.events.onDeath(this.o.container, () => {
      if (!this.destroying) abandon.abort(DIED);
    });
    this.inflight++;
    this.busy.enter();
    try {
      const spawned = channel ? '' : await this.spawnedPids();
      const req = {
        container: this.o.container,
        argv: channel
          ? ['/bin/sh', '-c', SPAWN_WRAPPER, 'rft-exec', ...argv]
          : ['/bin/sh', '-c', LAUNCH, 'rft-exec', SUBREAPER, '/bin/sh', '-c', EXEC_WRAPPER, 'rft-exec', spawned, ...argv],
        env: this.env(channel ? { ...opts.env, RFT_RESULT_FD: '1' } : opts.env),
        workingDir: [this.root, ...cwd].join('/') || '/',
        user: this.user,
        stdin: opts.stdin ?? '',
        maxOutputBytes: opts.maxOutputBytes ?? this.o.limits.maxOutputBytes,
      };
      // The wrapper itself was killed (by the command): what it would have swept is swept from outside.
      // The sweep checks inside the container that no other exec (of any replica) or spawned process
      // runs; the counts here only spare an exec that would find one.
      const onExit = async (): Promise<void> => {
        if (this.inflight <= 1 && this.processes.size === 0) await this.kill('all');
      };
      const hooks = { stop, onExit, abandon: abandon.signal, preamble };
      let out: DockerExecOutcome;
      try {
        out = await this.run(req, hooks);
      } catch (e) {
        if (e === DIED) throw await this.lost(); // a kill under way, if any, fails quietly (driverExec)
        if (e !== GIVEN_UP) throw e;
        await this.givenUp();
        out = { exitCode: 137, stdout: Buffer.alloc(0), stderr: Buffer.alloc(0), stdoutTruncated: false, stderrTruncated: false };
      }
      if (kill) await kill;
      // Cut by a signal, or by the runtime itself (runsc: 128, its own words), and not by this call:
      // the container may have died under the command (killed from outside, or gVisor's kernel taken
      // down by the rollout's hog). Then it is a lost sandbox, classified like the next call's, never
      // an outcome: "exit 137" for a kill of ours would be an infrastructure failure shown to the model.
      if (kill === null && out.exitCode !== null && out.exitCode >= 128) {
        if (await this.diedUnder()) throw await this.lost();
        // A signal's exit may be the wrapper's own: the command killed it before its sweep, and what the
        // command left (a setsid daemon gone to the init) holds no stream, so onExit never ran. Swept here.
        await onExit();
      }
      const killed = kill !== null && out.exitCode === 137;
      return {
        exitCode: killed ? null : out.exitCode,
        signal: killed ? 'SIGKILL' : null,
        stdout: channel ? '' : out.stdout.toString('utf8'),
        stderr: out.stderr.toString('utf8'),
        ...(channel ? { result: out.stdout.toString('utf8') } : {}),
        stdoutTruncated: out.stdoutTruncated,
        stderrTruncated: out.stderrTruncated,
        timedOut,
        durationMs: Math.round((performance.now() - started) * 10) / 10,
      };
    } finally {
      this.inflight--;
      this.busy.leave();
      clearTimeout(timer);
      clearTimeout(grace);
      unwatch();
      opts.signal?.removeEventListener('abort', stop);
    }
  }

  /** Activity only matters to the manager's TTL (TrackedSandbox); here it just runs. */
  hold<T>(work: () => Promise<T>): Promise<T> {
    return work();
  }

  /**
   * The pids of this replica's live spawned processes, for an exec's sweep (see SWEEP): these are
   * long-running servers, not commands whose leftovers may still be wanted, so they do not make the
   * sweep stand down (gVisor has no child subreaper, so the sweep is what ends a command's
   * \`setsid\` leftovers there while an MCP instance runs). Another replica's spawned processes are
   * not known here and still make it stand down.
   */
  private async spawnedPids(): Promise<string> {
    // A process spawned just before this exec may not have sent its pid line yet.
    const pids = await Promise.all([...this.spawned.values()].map((p) => p.wait()));
    return pids.flatMap((pid) => (pid !== null ? [String(pid)] : [])).join(' ');
  }

  async spawn(argv: string[], opts: SpawnOptions = {}): Promise<SandboxProcess> {
    if (this.destroying) throw errors.sandboxFailed(`sandbox ${this.id} was destroyed`);
    if (this.gone) throw this.goneError();
    const ch = await this.channel();
    if (this.gone) throw this.goneError();
    if (ch) return this.spawnOnAgent(ch, argv, opts);
    const req = {
      container: this.o.container,
      argv: ['/bin/sh', '-c', SPAWN_WRAPPER, 'rft-spawn', ...argv],
      env: this.env(opts.env),
      workingDir: [this.root, ...workspaceComponents(opts.cwd ?? '')].join('/') || '/',
      user: this.user,
    };
    const kill = async (pre: PidPreamble): Promise<void> => {
      // A kill right after the start may come before the pid line: it waits for it, or the process
      // would run on in the container once kill() closes its stream.
      const pid = pre.pid ?? (await Promise.race([pre.wait(), new Promise<null>((r) => setTimeout(() => r(null), QUICK_TIMEOUT_MS).unref())]));
      if (pid !== null) await this.kill('tree', pid);
    };
    let preamble: PidPreamble | undefined;
    const spawned = await this.o.engine
      .use((api) => dockerSpawn(api, this.o.engine.events, req, kill, (pre) => (preamble = pre)))
      .catch(async (e: unknown) => {
        throw await this.refusal(e);
      });
    // Ended when nobody here killed it: its container may have died under it (runsc then ends it with
    // 127, runc with a signal), and then its end is the sandbox's, classified as an exec's would be
    // (see exec()). Asked only by who reports the end (a server's own exit is rare).
    let killed = false;
    let why: Promise<Error | undefined> | undefined;
    const proc: SandboxProcess = {
      ...spawned,
      endedBySandbox: () =>
        (why ??= spawned.exited.then(async () => (killed || this.destroying || !(await this.diedUnder()) ? undefined : this.lost()))),
      kill: () => {
        killed = true;
        return spawned.kill();
      },
    };
    this.processes.add(proc);
    if (preamble) this.spawned.set(proc, preamble);
    void proc.exited.then(() => {
      this.processes.delete(proc);
      this.spawned.delete(proc);
    });
    if (this.destroying) {
      await proc.kill();
      throw errors.sandboxFailed(`sandbox ${this.id} was destroyed`);
    }
    return proc;
  }

  /**
   * One exec; a container that is gone (404) or stopped (409) means the sandbox is lost. So does an
   * exec the engine accepted while the container was already stopping, which the runtime then
   * refuses (exit 126, runc's "cannot exec in a stopped state" or runsc's "cannot execute in
   * container ... in state stopped": seen under gVisor right after a fork bomb or a memory hog took
   * the sandbox's kernel down), once the engine confirms the container is not running (a
   * command that prints those words itself changes nothing). A runtime that cannot start the
   * command because the sandbox's process limit is full answers the model's PROCESS_LIMIT_MESSAGE.
   */
  private async run(req: DockerExecRequest, hooks: DockerExecHooks): Promise<DockerExecOutcome> {
    if (this.gone) throw this.goneError();
    let out: DockerExecOutcome;
    try {
      out = await this.o.engine.use((api) => dockerExec(api, req, hooks));
    } catch (err) {
      throw await this.refusal(err);
    }
    if (out.exitCode !== 126) return out;
    const said = `${out.stdout.toString('latin1')}${out.stderr.toString('latin1')}`;
    if (STOPPED_STATE.test(said) && (await this.stops())) throw await this.lost();
    if (hooks.preamble?.pid === null && PROCESS_LIMIT_FULL.test(said)) {
      return { ...out, stdout: Buffer.alloc(0), stderr: Buffer.from(PROCESS_LIMIT_MESSAGE), stdoutTruncated: false, stderrTruncated: false };
    }
    return out;
  }

  /**
   * What an engine's refusal of an exec means: the sandbox's error (lost()) when it is the container's
   * absence: the exec's creation refused (404 gone, 409 stopped), or its start (also a 500 "is not
   * running": admin.ts NOT_RUNNING) or the reading of its
   * end once its stream closed refused while the container is found stopped (the engine drops the
   * execs of a container that stopped or was removed, "No such exec instance": seen under gVisor after
   * a fork bomb took the sandbox down and the read came late). Any other error as it is.
   */
  private async refusal(err: unknown): Promise<unknown> {
    if (!(err instanceof DockerStatusError) || (err.dockerStatus !== 404 && err.dockerStatus !== 409 && !NOT_RUNNING.test(err.message))) return err;
    if (err.path === `/containers/${this.o.container}/exec`) return this.lost();
    if (err.path.startsWith('/exec/') && (await this.stops())) return this.lost();
    return err;
  }

  /**
   * Whether the container is, or within STOP_SETTLE_MS becomes, not running: the runtime can refuse
   * an exec as stopped while the engine still reports the container running (runsc after a memory
   * hog: the engine learns of the death a moment later).
   */
  private async stops(): Promise<boolean> {
    const end = Date.now() + STOP_SETTLE_MS;
    for (;;) {
      if (!(await this.running())) return true;
      if (Date.now() >= end) return false;
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /**
   * Whether the container runs a command now (a bare `true`). Quick where the engine's state may lag:
   * a command's stream can end at its container's death before the engine records the container
   * stopped; a container that runs one more command was alive after the command ended.
   */
  private async answers(): Promise<boolean> {
    return (await this.driverExec(['true']))?.exitCode === 0;
  }

  /**
   * Whether a process that ended without a kill of ours ended because its container died: already
   * found gone, or it runs no `true` and the engine then reports it stopped.
   */
  private async diedUnder(): Promise<boolean> {
    return this.gone !== false || (!(await this.answers()) && (await this.stops()));
  }

  /** Whether the engine says the container runs (false when it is gone; true when the engine cannot say). */
  private async running(): Promise<boolean> {
    const info = await this.o.engine
      .use((api) => api.call<{ State?: { Running?: boolean } }>('GET', `/containers/${this.o.container}/json`, undefined, { ok: [404] }))
      .catch(() => null);
    return info === null || (info.status !== 404 && info.body.State?.Running === true);
  }

  /** Runs one of the file helpers; its stdout, or the error its exit code means. */
  private async helper(op: keyof typeof FILE_SCRIPTS, path: string, args: string[], stdin: string | Buffer, cap: number): Promise<Buffer> {
    if (this.destroying) throw errors.sandboxFailed(`sandbox ${this.id} was destroyed`);
    const req = {
      container: this.o.container,
      argv: ['/bin/sh', '-c', FILE_SCRIPTS[op], `rft-${op}`, ...args],
      env: this.env(),
      workingDir: this.root || '/',
      user: this.user,
      stdin,
      maxOutputBytes: cap,
    };
    const abandon = AbortSignal.timeout(Math.max(this.o.limits.wallTimeoutMs, QUICK_TIMEOUT_MS));
    const ch = await this.channel();
    const out = ch ? await this.helperOnAgent(ch, req.argv, stdin, cap) : await this.run(req, { stop: () => {}, abandon });
    const err = op === 'list' && out.exitCode === 1 && out.stdout.length > 0 ? null : fileError(out.exitCode, path, out.stderr.toString('utf8'));
    if (err) throw err;
    return out.stdout;
  }

  /** A file helper over the agent, its outcome as an exec's (a signal as 128 + its number, as a shell says it). */
  private async helperOnAgent(ch: AgentChannel, argv: string[], stdin: string | Buffer, cap: number): Promise<DockerExecOutcome> {
    const r = await this.onAgent(ch, argv, { stdin, maxOutputBytes: cap, timeoutMs: Math.max(this.o.limits.wallTimeoutMs, QUICK_TIMEOUT_MS) });
    const code = r.exitCode ?? (r.signal === 'SIGXFSZ' ? 153 : 137);
    return { exitCode: code, stdout: r.stdout, stderr: r.stderr, stdoutTruncated: r.stdoutTruncated, stderrTruncated: r.stderrTruncated };
  }

  async readFile(path: string, opts: { maxBytes?: number } = {}): Promise<Buffer> {
    const parts = workspaceComponents(path);
    if (parts.length === 0) throw errors.badRequest(`"${path}" is a directory`, { path });
    const cap = opts.maxBytes ?? this.o.limits.diskBytes ?? 256 * 1024 * 1024;
    return this.helper('read', path, [opts.maxBytes === undefined ? 'all' : String(opts.maxBytes), ...parts], '', cap);
  }

  async writeFile(path: string, data: string | Buffer): Promise<void> {
    const parts = workspaceComponents(path);
    if (parts.length === 0) throw errors.badRequest(`"${path}" is a directory`, { path });
    await this.helper('write', path, parts, data, 4096);
  }

  async listFiles(path = '', opts: { maxDepth?: number; maxEntries?: number } = {}): Promise<FileEntry[]> {
    const parts = workspaceComponents(path);
    const out = await this.helper('list', path, [String(opts.maxDepth ?? 8), ...parts], '', LIST_CAP);
    return parseListing(out, parts, opts.maxEntries ?? 1000);
  }

  async copyOut(hostDir: string, bounds: CopyBounds = copyBoundsFor(this.o.limits)): Promise<CopyReport> {
    // A container found gone (lost()) was removed: its archive would be a 404 read as a failure of ours.
    if (this.gone) throw this.goneError();
    await mkdir(hostDir, { recursive: true });
    const res = await this.o.engine.use((api) => api.stream(`/containers/${this.o.container}/archive?path=${encodeURIComponent(`${this.root}/.`)}`));
    return extractArchive(res.body, hostDir, bounds);
  }

  /** The container cgroup's CPU time (under gVisor: its kernel's, which runs all the sandbox does). */
  async cpuSeconds(): Promise<number | null> {
    if (this.gone || this.destroying) return null;
    const res = await this.o.engine.use((api) =>
      api.call<{ cpu_stats?: { cpu_usage?: { total_usage?: number } } }>('GET', `/containers/${this.o.container}/stats?stream=false&one-shot=true`, undefined, { ok: [404] }),
    );
    const ns = res.status === 404 ? undefined : res.body.cpu_stats?.cpu_usage?.total_usage;
    return typeof ns === 'number' ? ns / 1e9 : null;
  }

  /** The container cgroup's memory less its page cache (under gVisor: its kernel's too, which holds all the sandbox does). */
  async memoryBytes(): Promise<number | null> {
    if (this.gone || this.destroying) return null;
    type Mem = { memory_stats?: { usage?: number; stats?: { total_inactive_file?: number; inactive_file?: number; cache?: number } } };
    const res = await this.o.engine.use((api) => api.call<Mem>('GET', `/containers/${this.o.container}/stats?stream=false&one-shot=true`, undefined, { ok: [404] }));
    const m = res.status === 404 ? undefined : res.body.memory_stats;
    if (typeof m?.usage !== 'number') return null;
    return Math.max(0, m.usage - (m.stats?.total_inactive_file ?? m.stats?.inactive_file ?? 0));
  }

  claimPrestarted(key: string): PrestartedProcess | null {
    return this.gone || this.destroying ? null : (this.o.prestarted?.claim(key) ?? null);
  }

  /** Removes the container, and with it every process in it (spawned ones included) and the workspace. */
  destroy(): Promise<void> {
    this.destroying ??= this.o.engine
      .settled()
      .then(() => this.o.engine.use((api) => api.removeContainer(this.o.container)))
      .then(async () => {
        await Promise.all([...this.processes].map((p) => p.exited));
      })
      .finally(() => {
        this.o.engine.events.forgetContainer(this.o.container);
        this.o.onDestroy?.();
      });
    return this.destroying;
  }
}
