// Host (unsandboxed) stdio MCP servers, and what they start, must not outlive this server: a server
// that ignores its closed stdin kept running after a kill -9 (ppid 1), with nobody left to stop it.
// Two guards:
// - while this server dies: each instance runs under `setpriv --pdeathsig KILL` (util-linux) where
//   it exists, so the kernel kills it the moment this process is gone;
// - at the next start: each instance's process group is recorded (pid, its start time and the boot
//   id, so a reused pid is never taken for it) in the bridge's work directory, which is per data dir
//   (src/sandbox/instance-id.ts), and the bridge kills what is left of the recorded groups before it
//   starts anything (what the instance started outlives the kernel's signal, which reaches only it).
// Sandboxed instances need neither: they die with their sandbox, which has guards of its own.
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { readdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { killTree } from '../sandbox/host/proc-tree.js';
import { signalGroup } from '../sandbox/host/spawn.js';

const SETPRIV = '/usr/bin/setpriv';
const hasSetpriv = process.platform === 'linux' && existsSync(SETPRIV);

/** The command line that starts a host instance: killed by the kernel when this server dies, where setpriv exists. */
export function withDeathSignal(argv: string[]): string[] {
  return hasSetpriv ? [SETPRIV, '--pdeathsig', 'KILL', '--', ...argv] : argv;
}

interface Stat {
  pgrp: number;
  start: string;
}

async function statOf(pid: number): Promise<Stat | undefined> {
  const text = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
  if (!text) return undefined;
  // "pid (comm) state ppid pgrp ... starttime(22nd)": comm may hold spaces, so split after the last ')'.
  const f = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return { pgrp: Number(f[2]), start: f[19] ?? '' };
}

const bootId = (): Promise<string> => readFile('/proc/sys/kernel/random/boot_id', 'utf8').then((s) => s.trim(), () => '');

/** Records a started instance's group (its pid leads it); the returned function drops the record once it has exited. */
export async function recordHostProcess(dir: string, pid: number | undefined): Promise<() => void> {
  if (pid === undefined || process.platform !== 'linux') return () => {};
  const stat = await statOf(pid);
  if (!stat) return () => {}; // already gone: nothing to reap later
  mkdirSync(dir, { recursive: true });
  const file = join(dir, String(pid));
  writeFileSync(file, `${await bootId()} ${stat.start}\n`);
  return () => rmSync(file, { force: true });
}

/** Kills what recorded instances left running (a crash of the previous process); returns how many groups had some. */
export async function reapHostProcesses(dir: string): Promise<number> {
  let names: string[];
  try {
    names = (await readdir(dir)).filter((n) => /^\d+$/.test(n));
  } catch {
    return 0;
  }
  const boot = await bootId();
  let reaped = 0;
  for (const name of names) {
    const pid = Number(name);
    const [recBoot, recStart] = (await readFile(join(dir, name), 'utf8').catch(() => '')).trim().split(' ');
    if (recBoot === boot && recStart) {
      const leader = await statOf(pid);
      if (leader?.start === recStart) {
        await killTree(pid);
        signalGroup(pid);
        reaped++;
      } else if (!leader) {
        // The leader exited and its pid is free; the kernel keeps a pid that still names a group off
        // limits, so processes in group `pid` are what it left.
        const members = await groupMembers(pid);
        for (const m of members) await killTree(m);
        if (members.length) reaped++;
      }
      // Otherwise the pid is another process's now, so the group it led is empty.
    }
    await rm(join(dir, name), { force: true });
  }
  return reaped;
}

async function groupMembers(pgrp: number): Promise<number[]> {
  const pids = (await readdir('/proc')).filter((n) => /^\d+$/.test(n)).map(Number);
  const stats = await Promise.all(pids.map(async (p) => [p, await statOf(p)] as const));
  return stats.filter(([, s]) => s?.pgrp === pgrp).map(([p]) => p);
}
