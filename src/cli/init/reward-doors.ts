// The new project's README section for the trainers that reach the private listener's reward and
// SandboxFusion doors (trainer-doors.md §4, §5): slime's and OpenRLHF's remote reward URL, and
// verl's SandboxFusion code reward.

/** The private listener's port in the README's commands. */
export const PRIVATE_PORT = 8789;

export function rewardDoorsSection(grader: string): string {
  const base = `http://127.0.0.1:${PRIVATE_PORT}`;
  return `## Train with slime, OpenRLHF or verl's code reward

These trainers call a reward URL with a finished answer, and verl's code reward calls a SandboxFusion
service; the server's private listener serves both (no key: loopback, or the trainers' private network with
\`RFT_PRIVATE_ALLOW_REMOTE=1\`). Each grade and each run is recorded and shows on the dashboard.

\`\`\`sh
RFT_PRIVATE_PORT=${PRIVATE_PORT} npm start      # the private listener on 127.0.0.1:${PRIVATE_PORT}, beside the Agent RFT routes
# slime: the label is the row's grader fields as JSON (or just the reference answer)
--rm-type remote_rm --rm-url ${base}/reward/${grader} --label-key label
# OpenRLHF (formerly --remote_rm_url)
--reward.remote_url ${base}/reward/${grader} --data.label_key label
# verl, code tasks (data_source codecontests, apps, codeforces or taco): each test case runs in a fresh sandbox
reward_model.sandbox_fusion.url=${base}/run_code reward_model.sandbox_fusion.memory_limit_mb=512
\`\`\`

A grader that cannot grade answers 5xx: slime and OpenRLHF retry it, then stop loudly rather than train on a
false zero. The rft-endpoints docs (reward-endpoints.md, sandbox-fusion.md) say what each door answers.
`;
}
