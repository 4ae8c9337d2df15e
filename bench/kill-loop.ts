// The kill loop (see bench/lib/kill-loop.ts): rounds of load, kill -9 at a random moment, restart,
// the trainer's retries, and the counts that must be 0. Sandboxes: bwrap by default, with coding
// rollouts (write files, run commands, unit_tests grades) running across the restarts.
//
//   node --conditions=rft-source --import tsx bench/kill-loop.ts [rounds] [sandbox driver] [longest round ms]
//   (default 25 bwrap 1200: a kill 150 ms to 1.2 s into each round's load; longer rounds let coding rollouts finish)
import { killLoop } from './lib/kill-loop.js';

const rounds = Number(process.argv[2] ?? 25);
const sandbox = (process.argv[3] ?? 'bwrap') as 'bwrap' | 'process' | 'docker' | 'none';
const longest = Number(process.argv[4] ?? 1200);
const t0 = performance.now();
const r = await killLoop({ rounds, sandbox, killAfterMs: [150, longest], log: (l) => console.log(l) });
const c = r.coding;
console.log(`\n${r.rounds} rounds in ${((performance.now() - t0) / 1000).toFixed(0)} s, sandbox ${sandbox}`);
console.log(`calls acknowledged ${r.acknowledged}; cut off by a kill and retried ${r.retried} (answered 503 RFT_ERR_CALL_INTERRUPTED ${r.interrupted})`);
if (sandbox !== 'none') {
  console.log(`coding rollouts ${c.started}: graded ${c.graded}, dropped by the trainer after a 5xx and 3 retries ${c.dropped} (${JSON.stringify(c.droppedBy)})`);
}
const zeros = {
  'acknowledged calls lost': r.lost,
  'calls run twice': r.ranTwice,
  'budgets overspent': r.overspent,
  'sandboxes left': r.sandboxesLeft,
  'interrupted calls charged': r.interruptedCharged,
  'interrupted calls shown as output': r.interruptedShown,
  'calls answered on a replaced workspace': c.replacedCalls,
  'rollouts graded on a replaced workspace': c.gradedReplaced,
};
console.log(Object.entries(zeros).map(([k, v]) => `${k} ${v}`).join(' | '));
const ok = Object.values(zeros).every((v) => v === 0);
console.log(ok ? 'all 0: guarantees held' : 'FAILED');
process.exit(ok ? 0 : 1);
