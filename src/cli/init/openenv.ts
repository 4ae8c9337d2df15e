// The project README's section for OpenEnv's trainers (docs/openenv.md): TRL's environment_factory and
// SkyRL, each a thin class over OpenEnv's client pointed at the project's environment on the private
// listener. The project is one environment, named after its folder, so its base URL ends with that name.

export const OPENENV_PORT = 8790;

export function openEnvSection(name: string, tools: string[]): string {
  const url = `http://127.0.0.1:${OPENENV_PORT}/${name}`;
  const first = tools[0] ?? 'my_tool';
  return `## Train with OpenEnv (TRL, SkyRL)

The server's OpenEnv door serves this project at \`${url}\` (\`WS /${name}/ws\`) on its private listener, which
takes no credential: keep it on loopback or the trainers' private network. \`pip install openenv\` in the trainer's
environment. A reset names the dataset row (\`split\`, \`index\`); the \`submit\` tool ends the episode with the
grader's reward. An error the server raises (\`Server error: ...\`) is never the model's doing: the episode is lost,
not scored.

\`\`\`sh
RFT_PRIVATE_PORT=${OPENENV_PORT} npm start
\`\`\`

TRL (\`GRPOTrainer(..., environment_factory=RftEnv)\`, dataset rows \`{"prompt": [...], "split": "train", "index": i}\`):

\`\`\`python
from openenv.core.generic_client import GenericEnvClient

class RftEnv:
    def __init__(self):
        self.client = GenericEnvClient(base_url="${url}").sync()
        self.client.connect()

    def reset(self, split="train", index=0, **kwargs):
        self.reward, self.lost = 0.0, False
        return self.client.reset(split=split, index=index).observation["prompt"]

    def _call(self, name, **arguments):
        try:
            r = self.client.step({"type": "call_tool", "tool_name": name, "arguments": arguments})
        except RuntimeError:
            self.lost = True          # ours, not the model's: left out of training
            raise
        if r.done:
            self.reward = r.reward
        o = r.observation
        return o["error"]["message"] if o.get("error") else o["result"]["data"]

    def ${first}(self, **arguments) -> str:
        """One method per tool (${tools.join(', ')}), its arguments typed and described as GET /v1/tools lists them."""
        return self._call("${first}", **arguments)

    def submit(self, answer: str) -> str:
        """Submit your final answer.

        Args:
            answer: The final answer.
        """
        return self._call("submit", answer=answer)

    def get_reward(self):
        return None if self.lost else self.reward
\`\`\`

SkyRL (a \`BaseTextEnv\`, as its OpenEnv integration \`examples/train_integrations/openenv/env.py\`): in \`__init__\`,
\`self.env = GenericEnvClient(base_url="${url}").sync()\` and \`self.env.reset(split=..., index=...)\` from the row's
\`extras\`; in \`step(action)\`, parse the model's tool call and send \`{"type": "call_tool", "tool_name", "arguments"}\`;
\`reward\` and \`done\` are the step result's. docs/openenv.md in rft-endpoints has the whole protocol.
`;
}
