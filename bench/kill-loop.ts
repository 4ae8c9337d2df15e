// The kill loop (see bench/lib/kill-loop.ts): rounds of load, kill -9 at a random moment, restart,
// the trainer's retries, and the four counts that must be 0. Sandboxes: bwrap by default.
//
//   node --import tsx bench/kill-loop.ts [rounds] [sandbox driver]      (default 25 bwrap)
import { killLoop } from './lib/kill-loop.js';

const rounds = Number(process.argv[2] ?? 25);
const sandbox = (process.argv[3] ?? 'bwrap') as 'bwrap' | 'process' | 'docker' | 'none';
const t0 = performance.now();
const r = await killLoop({ rounds, sandbox, log: (l) => console.log(l) });
console.log(`\n${r.rounds} rounds in ${((performance.now() - t0) / 1000).toFixed(0)} s, sandbox ${sandbox}`);
console.log(`calls acknowledged ${r.acknowledged}; cut off by a kill and retried ${r.retried} (interrupted ${r.interrupted})`);
console.log(`acknowledged calls lost ${r.lost} | calls run twice ${r.ranTwice} | budgets overspent ${r.overspent} | sandboxes left ${r.sandboxesLeft}`);
const ok = r.lost === 0 && r.ranTwice === 0 && r.overspent === 0 && r.sandboxesLeft === 0;
console.log(ok ? 'all 0: guarantees held' : 'FAILED');
process.exit(ok ? 0 : 1);
