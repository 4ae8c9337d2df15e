// What the benches read of a server in its own process: its RSS and children (/proc), and its
// /metrics as sums by series name and label set.
import { readdir, readFile } from 'node:fs/promises';
import { request } from 'undici';

/** VmRSS of a process, bytes (0 once it is gone). */
export async function rss(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
  const m = /VmRSS:\s+(\d+) kB/.exec(status);
  return m ? Number(m[1]) * 1024 : 0;
}

export async function childrenOf(pid: number): Promise<number[]> {
  const out: number[] = [];
  for (const t of await readdir(`/proc/${pid}/task`).catch(() => [] as string[])) {
    const kids = await readFile(`/proc/${pid}/task/${t}/children`, 'utf8').catch(() => '');
    out.push(...kids.split(' ').filter(Boolean).map(Number));
  }
  return out;
}

/** Sums of the server's histograms (seconds) and counters, by metric name and label set. */
export async function metrics(url: string, key: string): Promise<Map<string, number>> {
  const res = await request(`${url}/metrics`, { headers: { authorization: `Bearer ${key}` } });
  const text = await res.body.text();
  const m = new Map<string, number>();
  for (const line of text.split('\n')) {
    const x = /^(rft_\w+?(?:_sum|_count|_total)?)(\{[^}]*\})? ([\d.e+-]+)$/.exec(line);
    if (x) m.set(`${x[1]}${x[2] ?? ''}`, Number(x[3]));
  }
  return m;
}

export const sumOf = (m: Map<string, number>, prefix: string): number => [...m].filter(([k]) => k.startsWith(prefix)).reduce((a, [, v]) => a + v, 0);
