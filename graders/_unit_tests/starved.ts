// Whose fault a starved case is. The runner reports a case "starved" when it got far neither in
// wall time less its waits for a CPU nor in CPU time, in STARVE_FACTOR times its limit, while the
// processes of its own sandbox took no more than their share (runner.py, "Time"): the machine kept
// it off the CPU. That is ours (the grade fails with a 5xx and the trainer retries or drops it),
// unless the rollout's own processes, still running in its sandbox, were what kept the machine
// busy: without a CPU cgroup (bwrap) they compete with the grading sandbox for the host's CPUs, and
// a 5xx would let a policy turn its zero into a discarded rollout by leaving work running.
import { errors, type Sandbox } from 'rft-endpoints';
import type { CaseResult } from './run.js';

/** CPU seconds a second the rollout's leftovers may use before they count as what starved the cases. */
const BUSY_CPU_PER_S = 0.1;

/**
 * Watches the CPU the rollout's sandbox uses while its grade runs, measured from outside it
 * (Sandbox.cpuSeconds: the engine's cgroup, or the host's /proc for the sandbox's uid), so nothing
 * the rollout left running can hide from it (stopping while a probe inside looked, say).
 */
export class RolloutLoad {
  private readonly from: Promise<number | null>;
  private readonly since = performance.now();

  /** Starts at once; the first reading is not waited for (an engine's stats may take a second). */
  constructor(private readonly sandbox: Sandbox) {
    this.from = cpuOf(sandbox);
  }

  /** Whether the rollout's processes used the CPU since the watch began; false where it cannot be told. */
  async busy(): Promise<boolean> {
    const [from, to] = [await this.from, await cpuOf(this.sandbox)];
    if (from === null || to === null) return false;
    const seconds = Math.max(1, (performance.now() - this.since) / 1000);
    return (to - from) / seconds >= BUSY_CPU_PER_S;
  }
}

/** Never rejects. Docker's stats come from a collector that samples each second: up to a second's wait. */
async function cpuOf(sandbox: Sandbox): Promise<number | null> {
  // Gone (ended by its own commands, or expired): nothing of it runs to have starved the cases.
  return (await sandbox.cpuSeconds?.().catch(() => null)) ?? null;
}

/**
 * The results with their starved cases settled: failed, as timed out, when the rollout's leftover
 * processes were busy meanwhile; else the grade fails as ours (RFT_ERR_GRADER_FAILED).
 */
export async function settleStarved(results: CaseResult[], load: RolloutLoad | undefined): Promise<CaseResult[]> {
  const starved = results.filter((c) => c.starved);
  if (starved.length === 0) return results;
  if (load && (await load.busy())) {
    const detail = "timed out: the rollout's own processes, still running in its sandbox, kept the machine busy";
    return results.map((c) => (c.starved ? { name: c.name, passed: false, detail } : c));
  }
  const first = starved[0]!;
  throw errors.graderFailed('unit_tests', `the machine was too loaded to run ${starved.length} hidden case(s), first "${first.name}" (${first.detail})`);
}
