// The init'ed project README's section on the ORS door (Open Reward Standard): TRL's OpenReward
// integration, SkyRL and ROLL reach the project through it, at the root of the main listener.

/** The section, for the project named `env` (its environment is named after its folder). */
export function orsSection(env: string): string {
  return `## Train with TRL (OpenReward), SkyRL or ROLL

The same server speaks the Open Reward Standard (ORS) at the root of its main listener, behind the same
keys (sent as \`X-API-Key\` or \`Authorization: Bearer\`): this project is the environment \`${env}\`, its
\`train.jsonl\` the split \`train\` (tasks by index), its tools plus a \`submit\` tool whose reward is the
grader's score. Clients of the \`openreward\` SDK need both of its URLs pointed at the server:

\`\`\`sh
export OPENREWARD_API_URL=http://127.0.0.1:8787 OPENREWARD_SESSION_URL=http://127.0.0.1:8787
export OPENREWARD_API_KEY=<a key of this server>
\`\`\`

TRL (\`pip install trl[openreward]\`):

\`\`\`python
from trl import GRPOConfig, GRPOTrainer
from trl.experimental.openreward import OpenRewardSpec

spec = OpenRewardSpec("http://127.0.0.1:8787", env_name="${env}", split="train")
trainer = GRPOTrainer(model="Qwen/Qwen3-4B", args=GRPOConfig(max_tool_calling_iterations=20),
                      train_dataset=spec.train_dataset, environment_factory=spec.environment_factory,
                      reward_funcs=spec.reward_funcs)
trainer.train()
\`\`\`

SkyRL and ROLL: their OpenReward environment takes the same two URLs and key, and the environment name
\`${env}\` (see each trainer's OpenReward example). A rollout is one ORS session: the model's tool calls run
exactly once each (a dropped stream resumes by its task_id), the budget ending the episode says so with
\`finished: true\`, and failures of the server are statuses the client retries, never a tool error the model
reads. The rft-endpoints docs/ors.md has the details.
`;
}
