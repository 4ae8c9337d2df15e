// The Harbor tasks this server serves, by the name a row gives them (`sandbox.harbor` =
// "<environment>/<task name>"). Built empty before the sandbox provider (which asks it for a rollout's
// task: its image, resources, workdir) and filled when the environments load, after the provider.
import type { HarborTask, HarborTaskLookup } from './types.js';

export class HarborTasks {
  private readonly byRef = new Map<string, HarborTask>();

  /** An environment's tasks; a later registration of the same environment replaces its tasks. */
  register(environment: string, tasks: readonly HarborTask[]): void {
    for (const ref of [...this.byRef.keys()]) if (ref.startsWith(`${environment}/`)) this.byRef.delete(ref);
    for (const t of tasks) this.byRef.set(harborRef(environment, t.name), t);
  }

  get size(): number {
    return this.byRef.size;
  }

  /** What the sandbox side is given: undefined for a task this server does not serve. */
  readonly lookup: HarborTaskLookup = (ref) => this.byRef.get(ref);
}

/** The `sandbox.harbor` value of a task's rows. */
export function harborRef(environment: string, task: string): string {
  return `${environment}/${task}`;
}

/** The environment a row's `sandbox.harbor` names (the part before the task's name), or undefined. */
export function harborEnvironmentOf(row: Readonly<Record<string, unknown>>): string | undefined {
  const ref = (row['sandbox'] as { harbor?: unknown } | null | undefined)?.harbor;
  if (typeof ref !== 'string') return undefined;
  const slash = ref.indexOf('/');
  return slash > 0 ? ref.slice(0, slash) : undefined;
}
