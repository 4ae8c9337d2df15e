// Fuzzes every route in process (see bench/lib/fuzz.ts) and prints the statuses, the heap after
// GC at each tenth of the run, and every failing request.
//
//   node --import tsx bench/fuzz.ts [requests] [seed]      (default 100000, a random seed)
import { describeFailure, fuzzRoutes } from './lib/fuzz.js';

const requests = Number(process.argv[2] ?? 100_000);
const seed = process.argv[3] !== undefined ? Number(process.argv[3]) : Date.now() % 2 ** 31;
const r = await fuzzRoutes({ requests, seed, log: (l) => console.log(l) });
console.log(`\n${r.requests} requests in ${r.seconds.toFixed(0)} s (${(r.requests / r.seconds).toFixed(0)}/s), seed ${seed}`);
console.log('statuses:', JSON.stringify(r.byStatus));
console.log('ms by route:', JSON.stringify(Object.fromEntries(Object.entries(r.msByRoute).map(([k, v]) => [k, Math.round(v)]))));
for (const s of r.slowest) console.log(`  slow ${s.ms.toFixed(0)} ms: ${s.request}`);
console.log('5xx by code and route:', JSON.stringify(r.byCode5xx));
console.log('heap after GC (MB):', r.heapMb.map((h) => h.toFixed(1)).join(' '));
console.log(`crashes: ${r.crashes.length}; failures (unexpected 5xx or hangs): ${r.failures.length}`);
const groups = new Map<string, number>();
for (const f of r.failures) groups.set(`${f.why === 'hang' ? 'HANG' : f.status} ${f.code ?? '-'} ${f.request.route}`, (groups.get(`${f.why === 'hang' ? 'HANG' : f.status} ${f.code ?? '-'} ${f.request.route}`) ?? 0) + 1);
for (const [g, n] of groups) console.log(`  ${n} x ${g}`);
for (const f of r.failures.slice(0, 20)) console.log(`  ${describeFailure(f)}`);
for (const c of r.crashes.slice(0, 5)) console.log(`crash: ${c}`);
process.exit(r.failures.length === 0 && r.crashes.length === 0 ? 0 : 1);
