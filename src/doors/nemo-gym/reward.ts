// /verify's reward_components. NeMo RL aborts unless reward == sum(reward_components)
// (nemo_rl/environments/nemo_gym.py), and Python's sum() of floats is compensated from 3.12 on,
// plain left to right before: the components are the grader's subscores as shares of the score,
// each but the last a multiple of 2^-20 (their partial sums are then exact, whichever way they are
// summed), the last what is left of the score. When that does not come out exact (a score far
// outside [-2^30, 2^30]) or the grader has fewer than two subscores, one component: its score.
const QUANTUM = 2 ** -20;

export function rewardComponents(grader: string, score: number, subscores: Record<string, number>): Record<string, number> {
  const entries = Object.entries(subscores);
  const total = entries.reduce((s, [, v]) => s + v, 0);
  if (entries.length > 1 && total > 0 && entries.every(([, v]) => v >= 0)) {
    const shares = entries.map(([k, v]) => [k, Math.round((score * v) / total / QUANTUM) * QUANTUM] as [string, number]);
    const head = shares.slice(0, -1).reduce((s, [, v]) => s + v, 0);
    const last = score - head;
    if (Math.abs(head) < 2 ** 30 && head + last === score && last - score === -head) {
      shares[shares.length - 1]![1] = last;
      return Object.fromEntries(shares);
    }
  }
  return { [grader]: score };
}
