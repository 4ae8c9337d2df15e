// The init'ed project README's section on the ORS door (Open Reward Standard): TRL's OpenReward
// integration, SkyRL and ROLL reach the project through it, at the root of the main listener. SkyRL's and
// ROLL's parts follow their own files: NovaSky-AI/SkyRL examples/train_integrations/openreward/{env,
// prepare_tasks}.py, run_openreward.sh, entrypoints/main_openreward.py (which forwards only the key and the
// upload settings to Ray workers; skyrl/train/utils/utils.py forwards no OPENREWARD_ URL either), and
// alibaba/ROLL roll/pipeline/agentic/env/openreward/openreward_env.py with
// examples/agentic_demo/openreward_endless_terminals_reinforce_qwen35_2b.yaml (env_type, env_config).

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
export OPENREWARD_DISABLE_UPDATE_CHECK=1   # else the SDK asks PyPI for a newer version of itself
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

SkyRL (its \`examples/train_integrations/openreward/\`): the dataset is made from this server, then trained on:

\`\`\`sh
python examples/train_integrations/openreward/prepare_tasks.py --env ${env} --split train \\
  --output "$HOME/data/openreward/train.parquet"
OPENREWARD_UPLOAD_ROLLOUT=false DATA_DIR="$HOME/data/openreward" \\
  bash examples/train_integrations/openreward/run_openreward.sh
\`\`\`

Its entry point forwards \`OPENREWARD_API_KEY\` to its Ray workers but not the two URLs: on a Ray cluster started
apart (\`ray start\`), start it with the URLs set, or the workers' SDK sends the key to openreward.ai. Without
\`OPENREWARD_UPLOAD_ROLLOUT=false\` each rollout is also sent to a rollout-upload API this server does not have
(SkyRL logs a warning; the record is here already).

ROLL (its \`roll/pipeline/agentic/env/openreward/\`): an environment of the pipeline's YAML; a task is picked
by the episode's seed, modulo the split's size:

\`\`\`yaml
custom_envs:
  RftTrain:
    env_type: "openreward_env"
    max_steps: \${max_actions_per_traj}
    env_manager_cls: roll.pipeline.agentic.env_manager.agent_native_env_manager.AgentNativeStepEnvManager
    env_config:
      environment_name: "${env}"
      split: "train"
      max_steps: \${max_actions_per_traj}
      reward_reduction: "sum"
\`\`\`

A rollout is one ORS session: the model's tool calls run exactly once each (a dropped stream resumes by its
task_id), the budget ending the episode says so with \`finished: true\`, and the reward is the \`submit\`
tool's (every other call's is null). Failures of the server are statuses the client retries, never a tool
error from the server; when the retries run out, each of these trainers shows the model the client's
exception as the call's output (ROLL has no retry of its own, SkyRL tries five times over about 45 s). The
rft-endpoints docs/ors.md has the details.
`;
}
