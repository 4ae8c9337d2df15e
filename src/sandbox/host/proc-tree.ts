// Kills a process and all its descendants, found by parent pid in /proc. Each pass stops (SIGSTOP)
// what it finds, so nothing can fork behind the walk; once a pass finds nothing new, all are killed.
// Used where a process group is not enough: a Docker exec (its host pid is known, its group is not
// ours) and children that moved to a group of their own.
import { readdir, readFile } from 'node:fs/promises';

const MAX_PASSES = 8;

export async function parentsByPid(): Promise<Map<number, number>> {
  const parents = new Map<number, number>();
  await Promise.all(
    (await readdir('/proc')).map(async (name) => {
      if (!/^\d+$/.test(name)) return;
      const stat = await readFile(`/proc/${name}/stat`, 'utf8').catch(() => '');
      // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so parse after the last ')'.
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (Number.isInteger(ppid)) parents.set(Number(name), ppid);
    }),
  );
  return parents;
}

/** A process and everything under it, from a map of parents (parentsByPid). */
export function treeOf(root: number, parents: Map<number, number>): number[] {
  const children = new Map<number, number[]>();
  for (const [pid, ppid] of parents) children.set(ppid, [...(children.get(ppid) ?? []), pid]);
  const out: number[] = [];
  const todo = parents.has(root) ? [root] : [];
  for (let p = todo.pop(); p !== undefined; p = todo.pop()) {
    out.push(p);
    todo.push(...(children.get(p) ?? []));
  }
  return out;
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    /* gone already, or not ours */
  }
}

/** SIGKILLs `root` and its descendants. Never throws. */
export async function killTree(root: number): Promise<void> {
  if (!Number.isInteger(root) || root <= 1 || root === process.pid) return;
  const frozen = new Set<number>();
  for (let pass = 0; pass < MAX_PASSES; pass++) {
    const fresh = treeOf(root, await parentsByPid()).filter((p) => !frozen.has(p) && p !== process.pid);
    if (fresh.length === 0) break;
    for (const p of fresh) {
      signal(p, 'SIGSTOP');
      frozen.add(p);
    }
  }
  for (const p of frozen) signal(p, 'SIGKILL');
}
