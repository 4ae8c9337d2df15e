// What the bwrap and process drivers share: workdirs under the sandboxes root, population from the
// template, and reaping by directory. A driver only says how a command is wrapped.
import { LocalSandbox, type LocalDriverHooks } from './local-sandbox.js';
import { createWorkdir, prepareRoot, reapWorkdirs, INSTANCE_LABEL, type Workdir } from './workdir.js';
import { populateWorkspace } from './workspace.js';
import type { Sandbox, SandboxDriver, SandboxSpec } from './types.js';

export interface LocalDriverOptions {
  /** Where workspaces live; must be searchable (o+x) all the way up when the server runs as root. */
  sandboxesRoot: string;
  /** Names this server across restarts, so a new process reaps what a crashed one left. */
  instanceId: string;
}

export abstract class LocalDriver implements SandboxDriver {
  abstract readonly name: 'bwrap' | 'process';
  private readonly live = new Set<string>();

  constructor(protected readonly opts: LocalDriverOptions) {}

  abstract available(): Promise<boolean>;

  protected abstract hooks(w: Workdir, spec: SandboxSpec): Omit<LocalDriverHooks, 'onDestroy'>;

  async create(spec: SandboxSpec): Promise<Sandbox> {
    await prepareRoot(this.opts.sandboxesRoot);
    const labels = { ...spec.labels, [INSTANCE_LABEL]: spec.labels[INSTANCE_LABEL] ?? this.opts.instanceId };
    const w = await createWorkdir(this.opts.sandboxesRoot, this.name, { ...spec, labels });
    const sb = new LocalSandbox(this.name, w, spec.limits, {
      ...this.hooks(w, spec),
      onDestroy: (s) => this.live.delete(s.id),
    });
    this.live.add(sb.id);
    try {
      const uid = w.meta.uid;
      await populateWorkspace(w.ws, spec, uid !== null ? { uid, gid: uid } : null);
    } catch (e) {
      await sb.destroy();
      throw e;
    }
    return sb;
  }

  /** Removes this instance's workdirs that no live sandbox of this process owns. */
  reapOrphans(): Promise<number> {
    return reapWorkdirs(this.opts.sandboxesRoot, this.opts.instanceId, (id) => this.live.has(id));
  }
}
