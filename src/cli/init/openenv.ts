// The project README's section for OpenEnv's trainers (docs/openenv.md): TRL's environment_factory and
// SkyRL, each a thin class over OpenEnv's client pointed at the project's environment on the private
// listener. The project is one environment, named after its folder, so its base URL ends with that name.
// TRL 1.13 (trl/trainer/grpo_trainer.py): `reset`'s string return is appended to the last user message
// (so the snippet's returns None: the dataset's prompt is the row's messages), `get_reward` is the
// environment's own reward source and not a tool, and a rollout whose every reward is None is unscorable
// (out of the group's baseline, advantage 0): what a lost episode gets. An episode that ended without submit
// (TRL's tool-call limit, a model that stopped) gets what the server records for it: get_reward submits the
// empty answer the server grades such an episode with (or reads the reward it already recorded).

export const OPENENV_PORT = 8790;

/** A tool as the project's dataset rows list it (Chat Completions format): what the methods are typed from. */
export interface ChatToolSpec {
  name: string;
  description?: string;
  parameters?: { properties?: Record<string, { type?: unknown; description?: string }>; required?: string[] };
}

const PY_KEYWORDS = new Set(
  'False None True and as assert async await break class continue def del elif else except finally for from global if import in is lambda nonlocal not or pass raise return try while with yield self'.split(' '),
);
const PY_TYPES: Record<string, string> = { string: 'str', integer: 'int', number: 'float', boolean: 'bool', array: 'list', object: 'dict' };
const Q3 = '"'.repeat(3);

/** A JSON-schema type as a Python annotation (a nullable type's other member; unknown: str). */
function pyType(t: unknown): string {
  const types = (Array.isArray(t) ? t : [t]).filter((x) => x !== 'null');
  return PY_TYPES[String(types[0])] ?? 'str';
}

/** Text safe inside a Python triple-quoted docstring, on one line. */
const doc = (text: string) => text.replace(/\\/g, '\\\\').replaceAll(Q3, "'''").replace(/\s+/g, ' ').trim();
const identifier = (n: string) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(n) && !PY_KEYWORDS.has(n);

/**
 * One typed method per tool, as TRL's environment_factory reads them (transformers' get_json_schema: every
 * argument typed and described in the docstring's Args); optional arguments default to None and are not sent.
 */
export function toolMethod(t: ChatToolSpec): string {
  const props = t.parameters?.properties ?? {};
  const required = new Set(t.parameters?.required ?? []);
  const names = Object.keys(props);
  const description = doc(t.description || `The ${t.name} tool.`);
  if (!identifier(t.name) || !names.every(identifier)) {
    // A name Python cannot spell: the arguments as one dict.
    return [
      `    def ${t.name.replace(/[^A-Za-z0-9_]/g, '_')}_tool(self, arguments: dict) -> str:`,
      `        ${Q3}${description}`,
      '',
      '        Args:',
      "            arguments: The tool's arguments, as GET /v1/tools lists them.",
      `        ${Q3}`,
      `        return self._call(${JSON.stringify(t.name)}, arguments)`,
      '',
    ].join('\n');
  }
  const ordered = [...names.filter((n) => required.has(n)), ...names.filter((n) => !required.has(n))];
  const params = ordered.map((n) => `, ${n}: ${pyType(props[n]!.type)}${required.has(n) ? '' : ' | None = None'}`).join('');
  return [
    `    def ${t.name}(self${params}) -> str:`,
    `        ${Q3}${description}`,
    ...(ordered.length ? ['', '        Args:', ...ordered.map((n) => `            ${n}: ${doc(props[n]!.description || n)}`)] : []),
    `        ${Q3}`,
    `        return self._call(${JSON.stringify(t.name)}, {${ordered.map((n) => `${JSON.stringify(n)}: ${n}`).join(', ')}})`,
    '',
  ].join('\n');
}

/** The tool that ends the episode (the door's submit). */
const SUBMIT: ChatToolSpec = {
  name: 'submit',
  description: 'Submit your final answer. This ends the episode.',
  parameters: { properties: { answer: { type: 'string', description: 'The final answer.' } }, required: ['answer'] },
};

export function openEnvSection(name: string, tools: ChatToolSpec[]): string {
  const url = `http://127.0.0.1:${OPENENV_PORT}/${name}`;
  return `## Train with OpenEnv (TRL, SkyRL)

The server's OpenEnv door serves this project at \`${url}\` (\`WS /${name}/ws\`) on its private listener, which
takes no credential: keep it on loopback or the trainers' private network. \`pip install openenv\` in the trainer's
environment. A reset names the dataset row (\`split\`, \`index\`); the \`submit\` tool ends the episode with the
grader's reward. An error the server raises (\`Server error: ...\`) is never the model's doing: the episode is lost,
not scored.

\`\`\`sh
RFT_PRIVATE_PORT=${OPENENV_PORT} npm start
\`\`\`

TRL 1.13 (\`GRPOTrainer(..., environment_factory=RftEnv)\`, no \`reward_funcs\`: the environment's \`get_reward\` is the
reward). Dataset rows are \`{"prompt": <the row's messages>, "split": "train", "index": i}\`, the prompt the model sees;
\`reset\` returns nothing, since TRL appends a string it returns to the last user message (the question would show
twice). Every public method but \`reset\` and \`get_reward\` is a tool the model can call, so the rest is private.
\`RFT_RUN=<label>\` in the trainer's environment labels its rollouts on the dashboard:

\`\`\`python
import os

from openenv.core.generic_client import GenericEnvClient

class RftEnv:
    def __init__(self):
        self._client = GenericEnvClient(base_url="${url}").sync()
        self._client.connect()

    def reset(self, split="train", index=0, **kwargs):
        self._reward, self._lost = None, False
        run = os.environ.get("RFT_RUN")
        self._client.reset(split=split, index=index, **({"run": run} if run else {}))
        # None: the dataset's prompt is the row's messages, which TRL shows as they are.

    def get_reward(self):
        """The grader's reward, or None for an episode lost to a failure of the server: TRL 1.13 leaves an episode
        every reward source gives None out of its group's baseline, with an advantage of 0 (a 0 would be a reward
        the model did not earn). An episode that ended without submit (the tool-call limit, a model that stopped)
        is graded with an empty answer, as the server records it when the episode ends unanswered."""
        if self._reward is None and not self._lost:
            try:
                self._call("submit", {"answer": ""})
            except RuntimeError:
                pass                  # lost: None
        return None if self._lost else self._reward

    def _call(self, name, arguments):
        arguments = {k: v for k, v in arguments.items() if v is not None}
        try:
            r = self._client.step({"type": "call_tool", "tool_name": name, "arguments": arguments})
        except RuntimeError:
            self._lost = True         # ours, not the model's: left out of training
            raise
        if r.done:
            self._reward = r.reward
        o = r.observation
        return o["error"]["message"] if o.get("error") else o["result"]["data"]

${[...tools.map(toolMethod), toolMethod(SUBMIT)].join('\n')}\`\`\`

SkyRL (a \`BaseTextEnv\`, as its OpenEnv integration \`examples/train_integrations/openenv/env.py\`): in \`__init__\`,
\`self.env = GenericEnvClient(base_url="${url}").sync()\` and \`self.env.reset(split=..., index=..., run=...)\` from the
row's \`extras\` (\`run\`, optional, labels the run on the dashboard); in \`step(action)\`, parse the model's tool call and send \`{"type": "call_tool", "tool_name", "arguments"}\`;
\`reward\` and \`done\` are the step result's. docs/openenv.md in rft-endpoints has the whole protocol.
`;
}
