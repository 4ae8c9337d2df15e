// CPU time used by a sandbox uid's processes, read from the host's /proc: what each process used
// and what it reaped of its exited children. Nothing the sandbox runs can hide from it.
import { readdir, readFile, stat } from 'node:fs/promises';

/** Clock ticks a second of /proc/<pid>/stat's times: USER_HZ, 100 on every Linux ABI Node runs on. */
const USER_HZ = 100;

export async function cpuSecondsOfUid(uid: number): Promise<number> {
  let ticks = 0;
  await Promise.all(
    (await readdir('/proc')).map(async (name) => {
      if (!/^\d+$/.test(name)) return;
      try {
        if ((await stat(`/proc/${name}`)).uid !== uid) return;
        const line = await readFile(`/proc/${name}/stat`, 'utf8');
        // after "pid (comm) ": state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime cutime cstime
        const f = line.slice(line.lastIndexOf(')') + 2).split(' ');
        ticks += Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]);
      } catch {
        /* it exited meanwhile */
      }
    }),
  );
  return ticks / USER_HZ;
}
