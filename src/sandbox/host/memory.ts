// Memory used by processes, read from the host's /proc: each process's PSS (its private pages and
// its share of the pages it shares, so a library mapped by 500 sandboxes counts once in all), from
// smaps_rollup; RSS where that is absent. Nothing a sandbox runs can hide from it.
import { readdir, readFile, stat } from 'node:fs/promises';
import { parentsByPid, treeOf } from './proc-tree.js';

const PAGE = 4096;

/** PSS of one process in bytes; 0 once it is gone. */
export async function pssOf(pid: number): Promise<number> {
  const rollup = await readFile(`/proc/${pid}/smaps_rollup`, 'utf8').catch(() => '');
  const m = /^Pss:\s+(\d+) kB/m.exec(rollup);
  if (m) return Number(m[1]) * 1024;
  const statm = await readFile(`/proc/${pid}/statm`, 'utf8').catch(() => '');
  return Number(statm.split(' ')[1] ?? 0) * PAGE || 0;
}

/** PSS of a process and every process under it, in bytes. */
export async function treeMemory(root: number): Promise<number> {
  return (await Promise.all(treeOf(root, await parentsByPid()).map(pssOf))).reduce((a, b) => a + b, 0);
}

/** PSS of every process of a uid (a sandbox's own), in bytes. */
export async function memoryOfUid(uid: number): Promise<number> {
  const sizes = await Promise.all(
    (await readdir('/proc')).map(async (name) => {
      if (!/^\d+$/.test(name)) return 0;
      const owner = await stat(`/proc/${name}`).then((s) => s.uid, () => -1);
      return owner === uid ? pssOf(Number(name)) : 0;
    }),
  );
  return sizes.reduce((a, b) => a + b, 0);
}
