// The `docker` driver: one long-lived container per rollout (an idle init), each exec through the
// Engine API's exec endpoint. No network (NetworkMode none), read-only root, no capabilities, no
// privilege gain, memory/pids/CPU limits, a non-root user. The workspace is the same host workdir the
// other drivers use (a size-capped tmpfs owned by the sandbox's uid), bind-mounted at /workspace, so
// file operations and templates work exactly as with bwrap.
import { DockerApi } from './docker-api.js';
import { ExecDeaths } from './docker-events.js';
import { dockerExec, dockerSpawn, killExecTree } from './docker-exec.js';
import { LocalDriver, type LocalDriverOptions } from './local-driver.js';
import { SANDBOX_PATH, type LocalDriverHooks, type ResolvedExec } from './local-sandbox.js';
import { WORKSPACE_MOUNT } from './paths.js';
import { canSwitchUid, killAllOf } from './uids.js';
import { INSTANCE_LABEL, type Workdir } from './workdir.js';
import type { ExecResult, SandboxSpec } from './types.js';

export interface DockerDriverOptions extends LocalDriverOptions {
  image: string;
  socketPath: string;
}

const SANDBOX_LABEL = 'rft-endpoints.sandbox';

function execEnv(env: Record<string, string>): string[] {
  return Object.entries({ PATH: SANDBOX_PATH, HOME: WORKSPACE_MOUNT, LANG: 'C.UTF-8', TMPDIR: '/tmp', ...env }).map(([k, v]) => `${k}=${v}`);
}
/** The container's idle init runs as nobody, so killing every process of the exec uid spares it. */
const INIT_USER = '65534:65534';

export class DockerDriver extends LocalDriver {
  readonly name = 'docker' as const;
  private readonly api: DockerApi;
  private readonly deaths: ExecDeaths;

  constructor(private readonly dopts: DockerDriverOptions) {
    super(dopts);
    this.api = new DockerApi(dopts.socketPath);
    this.deaths = new ExecDeaths(dopts.socketPath, `${INSTANCE_LABEL}=${dopts.instanceId}`);
  }

  async available(): Promise<boolean> {
    try {
      await this.api.call('GET', '/_ping');
      const img = await this.api.call('GET', `/images/${this.dopts.image}/json`, undefined, [404]);
      return img.status === 200;
    } catch {
      return false;
    }
  }

  protected async hooks(w: Workdir, spec: SandboxSpec): Promise<Omit<LocalDriverHooks, 'onDestroy'>> {
    const uid = w.meta.uid ?? process.getuid?.() ?? 1000;
    const l = spec.limits;
    const created = await this.api.call<{ Id: string }>('POST', `/containers/create?name=rft-${w.meta.id}`, {
      Image: this.dopts.image,
      Cmd: ['sleep', 'infinity'],
      User: INIT_USER,
      WorkingDir: WORKSPACE_MOUNT,
      Env: [`PATH=${SANDBOX_PATH}`, `HOME=${WORKSPACE_MOUNT}`, 'LANG=C.UTF-8'],
      Labels: {
        ...spec.labels,
        [INSTANCE_LABEL]: this.dopts.instanceId,
        'rft-endpoints.trace_id': spec.traceId,
        'rft-endpoints.created_at': w.meta.createdAt,
        [SANDBOX_LABEL]: w.meta.id,
      },
      NetworkDisabled: true,
      HostConfig: {
        NetworkMode: 'none',
        ReadonlyRootfs: true,
        CapDrop: ['ALL'],
        SecurityOpt: ['no-new-privileges'],
        Init: true,
        Memory: l.memoryBytes,
        MemorySwap: l.memoryBytes,
        PidsLimit: l.maxProcesses + 2,
        NanoCpus: 1_000_000_000,
        Ulimits: [
          { Name: 'fsize', Soft: l.maxFileBytes, Hard: l.maxFileBytes },
          { Name: 'cpu', Soft: Math.ceil(l.cpuSeconds), Hard: Math.ceil(l.cpuSeconds) },
          { Name: 'nofile', Soft: 1024, Hard: 1024 },
          { Name: 'core', Soft: 0, Hard: 0 },
        ],
        Tmpfs: { '/tmp': `rw,nosuid,nodev,size=${l.diskBytes ?? 64 * 1024 * 1024}` },
        Binds: [`${w.ws}:${WORKSPACE_MOUNT}`, ...(spec.readOnlyMounts ?? []).map((m) => `${m}:${m}:ro`)],
      },
    });
    const id = created.body.Id;
    const remove = async (): Promise<void> => {
      await this.api.call('DELETE', `/containers/${id}?force=true&v=true`, undefined, [404, 409]);
    };
    try {
      await this.api.call('POST', `/containers/${id}/start`, undefined, [304]);
    } catch (e) {
      await remove().catch(() => {});
      throw e;
    }
    return {
      execute: (e) => this.execIn(id, uid, e),
      spawn: (p) => dockerSpawn(this.api, this.deaths, { container: id, argv: p.argv, env: execEnv(p.env), workingDir: [WORKSPACE_MOUNT, ...p.cwd].join('/'), user: `${uid}:${uid}` }),
      beforeRemove: remove,
    };
  }

  /**
   * After a failed exec: restarts the container if its init is gone (killed from outside, OOM), so the
   * rollout goes on with its workspace instead of failing every further call. True if it restarted.
   */
  private async restartIfStopped(container: string): Promise<boolean> {
    const info = await this.api.call<{ State?: { Running?: boolean } }>('GET', `/containers/${container}/json`).catch(() => null);
    if (!info || info.body.State?.Running) return false;
    await this.api.call('POST', `/containers/${container}/start`, undefined, [304]);
    return true;
  }

  /** Kills every process of the exec uid: from the host when we are root (cheap), else from inside. */
  private async killExecs(container: string, uid: number): Promise<void> {
    if (canSwitchUid()) return killAllOf(uid);
    await dockerExec(
      this.api,
      { container, argv: ['/bin/sh', '-c', 'kill -9 -1'], env: [], workingDir: '/', user: `${uid}:${uid}`, stdin: '', maxOutputBytes: 1024 },
      () => {},
    ).catch(() => {});
  }

  private async execIn(container: string, uid: number, e: ResolvedExec): Promise<ExecResult> {
    const started = performance.now();
    let timedOut = false;
    let kill: Promise<void> | null = null;
    let execId: string | undefined;
    const stop = (): void => {
      // Alone, everything of the uid goes (setsid'd escapees too); beside other execs or a live
      // spawned process, only this exec's own process tree.
      kill ??= e.alone() || execId === undefined ? this.killExecs(container, uid) : killExecTree(this.api, execId).then(() => {});
    };
    const timer = setTimeout(() => {
      timedOut = true;
      stop();
    }, e.timeoutMs);
    e.signal?.addEventListener('abort', stop, { once: true });
    try {
      const req = { onCreated: (id: string) => void (execId = id), container, argv: e.argv, env: execEnv(e.env), workingDir: [WORKSPACE_MOUNT, ...e.cwd].join('/'), user: `${uid}:${uid}`, stdin: e.stdin, maxOutputBytes: e.maxOutputBytes };
      const sweep = async (): Promise<void> => {
        if (e.alone() && canSwitchUid()) await killAllOf(uid);
      };
      const out = await dockerExec(this.api, req, stop, sweep).catch(async (err: unknown) => {
        // Retried only when Docker refused to create the exec (409: not running), so nothing ran twice.
        const refused = err instanceof Error && err.message.includes(`/containers/${container}/exec: 409`);
        if (!refused || !(await this.restartIfStopped(container))) throw err;
        return dockerExec(this.api, req, stop, sweep);
      });
      // As with bwrap, nothing outlives its exec: background jobs and setsid daemons go too.
      if (kill) await kill;
      else if (e.alone() && canSwitchUid()) await killAllOf(uid);
      const killed = kill !== null && out.exitCode === 137;
      return {
        exitCode: killed ? null : out.exitCode,
        signal: killed ? 'SIGKILL' : null,
        stdout: out.stdout.toString('utf8'),
        stderr: out.stderr.toString('utf8'),
        stdoutTruncated: out.stdoutTruncated,
        stderrTruncated: out.stderrTruncated,
        timedOut,
        durationMs: Math.round((performance.now() - started) * 10) / 10,
      };
    } finally {
      clearTimeout(timer);
      e.signal?.removeEventListener('abort', stop);
    }
  }

  /** Removes this instance's containers (by label) that no live sandbox owns, then their workdirs. */
  override async reapOrphans(): Promise<number> {
    const filters = encodeURIComponent(JSON.stringify({ label: [`${INSTANCE_LABEL}=${this.dopts.instanceId}`] }));
    const list = await this.api.call<{ Id: string; Labels: Record<string, string> }[]>('GET', `/containers/json?all=true&filters=${filters}`);
    let reaped = 0;
    for (const c of list.body) {
      if (c.Labels[INSTANCE_LABEL] !== this.dopts.instanceId) continue; // never anyone else's
      const sb = c.Labels[SANDBOX_LABEL];
      if (sb !== undefined && this.live.has(sb)) continue;
      await this.api.call('DELETE', `/containers/${c.Id}?force=true&v=true`, undefined, [404, 409]);
      reaped++;
    }
    const dirs = await super.reapOrphans();
    return Math.max(reaped, dirs);
  }

  override async close(): Promise<void> {
    await super.close();
    this.deaths.close();
    await this.api.close().catch(() => {});
  }
}

