// The text files of a new project: package.json, README.md, .gitignore, and the NeMo Gym config
// with its stub entry. The project depends on rft-endpoints alone (its units import zod as \`z\`
// from it), so \`npm install\` adds nothing else.
import type { ExampleName, ExampleSpec } from './examples.js';
import { NEMO_GYM, nemoGymFiles } from './nemo-gym.js';
import { orsSection } from './ors.js';
import { openEnvSection, type ChatToolSpec } from './openenv.js';
import { pythonSection, SETUP_SCRIPT } from './python.js';
import { rewardDoorsSection } from './reward-doors.js';

export interface TemplateInput {
  name: string;
  /** The project folder's absolute path. */
  dir: string;
  example: ExampleName;
  spec: ExampleSpec;
  dependency: string;
  /** The job's max_episode_steps. */
  maxSteps: number;
  /** The tools as the project's dataset lists them (types and descriptions for the trainers' snippets). */
  tools: ChatToolSpec[];
}

const npmName = (dir: string): string => dir.toLowerCase().replace(/[^a-z0-9._-]+/g, '-').replace(/^[._-]+/, '') || 'rft-project';

function packageJson(t: TemplateInput): string {
  const pkg = {
    name: npmName(t.name),
    version: '0.1.0',
    private: true,
    type: 'module',
    engines: { node: '>=22' },
    scripts: t.spec.python
      ? {
          start: 'rft-endpoints serve',
          // The tools are the Python server's: only the running server can list them. The one
          // RFT_SERVER names, else this machine's on PORT (as `npm start` listens), with RFT_API_KEY or the generated key.
          check: 'rft-endpoints dataset check train.jsonl --server "${RFT_SERVER:-http://127.0.0.1:${PORT:-8787}}" --key "${RFT_API_KEY:-$(cat data/api-key)}"',
          typecheck: TYPECHECK_SCRIPT,
          'setup:python': SETUP_SCRIPT,
          postinstall: 'npm run setup:python',
        }
      : {
          start: 'rft-endpoints serve',
          // Restarts the server when a tool or grader file changes (Node's own watch mode, no dependency).
          dev: DEV_SCRIPT,
          check: 'rft-endpoints dataset check train.jsonl',
          typecheck: TYPECHECK_SCRIPT,
        },
    dependencies: { 'rft-endpoints': t.dependency },
  };
  return JSON.stringify(pkg, null, 2) + '\n';
}

/** `npm run typecheck`: tsc (`npm install -D typescript`) on tools/ and graders/ with the project's tsconfig.json. */
export const TYPECHECK_SCRIPT = 'tsc -p tsconfig.json';

/**
 * The units' tsconfig.json. `rft-source` resolves `rft-endpoints` to its TypeScript source in a clone (linked
 * with file:, no dist/ built); an installed package has no src/ and TypeScript falls back to its dist/ types.
 * @types/node is the project's own, or the linked clone's.
 */
export function tsconfigJson(): string {
  const config = {
    compilerOptions: {
      target: 'ES2022',
      module: 'NodeNext',
      moduleResolution: 'NodeNext',
      customConditions: ['rft-source'],
      lib: ['ES2023'],
      types: ['node'],
      typeRoots: ['./node_modules/@types', './node_modules/rft-endpoints/node_modules/@types'],
      strict: true,
      noUncheckedIndexedAccess: true,
      exactOptionalPropertyTypes: true,
      skipLibCheck: true,
      noEmit: true,
    },
    include: ['tools', 'graders'],
  };
  return JSON.stringify(config, null, 2) + '\n';
}

/**
 * `npm run dev`: the server under Node's watch mode, restarted when tools/, graders/ or job.json change, in
 * development (NODE_ENV), where it type-checks the units as it loads them (RFT_UNITS_TYPECHECK).
 */
export const DEV_SCRIPT = 'NODE_ENV=development node --watch-path=tools --watch-path=graders --watch-path=job.json node_modules/rft-endpoints/bin/rft-endpoints.js serve';

function nemoGymSection(t: TemplateInput): string {
  const g = NEMO_GYM;
  return `## Train with NeMo Gym

The same tools, sandboxes and grader serve NeMo Gym (and what reaches environments through it: NeMo RL,
verl's NeMo Gym recipe, Unsloth, prime-rl/verifiers) through the server's NeMo Gym door, a resources
server on a listener of its own. \`${g.config}\` names it (\`${g.resourcesServer}\`, at 127.0.0.1:${g.doorPort}), Gym's
\`simple_agent\` (\`${g.agent}\`, \`max_steps: ${t.maxSteps}\` as the job's \`max_episode_steps\`) and a model server
(\`${g.model}\`: set \`openai_base_url\` to your model's OpenAI-compatible API, which needs \`/responses\`).

\`\`\`sh
RFT_NEMO_GYM_PORT=${g.doorPort} npm start        # the door on 127.0.0.1:${g.doorPort}, beside the Agent RFT routes
npx rft-endpoints dataset convert train.jsonl --to nemo-gym --out train.gym.jsonl
# in the Python environment where nemo-gym is installed, from this folder:
ng_run "+config_paths=[${g.config}]"
ng_collect_rollouts +agent_name=${g.agent} +input_jsonl_fpath=train.gym.jsonl +output_jsonl_fpath=rollouts.jsonl +num_repeats=4
\`\`\`

\`ng_run\` starts every entry that has an \`entrypoint\` and stops all of them when one exits. The door is no
Python server, so its entry runs \`resources_servers/${g.resourcesImpl}/app.py\`, a stub that binds nothing and waits, while
\`host\`/\`port\` send every call to the door. \`ng_run\` finds that folder in the current directory; from anywhere
else, set \`NEMO_GYM_EXTRA_ROOTS\` to this folder. Start the door before \`ng_run\`: Gym waits for \`GET /\` to
answer, and its client retries a refused connection forever, so a door that is down stalls the collection.

The door takes no key (Gym's client sends none), so it listens on loopback unless
\`RFT_NEMO_GYM_ALLOW_REMOTE=1\`: keep it on the trainers' private network, never on a public address. Before a
run, play the trainer against it with a model of your own:
\`npx rft-endpoints rollout --door nemo-gym --door-url http://127.0.0.1:${g.doorPort} --dataset train.jsonl --model NAME --base-url URL\`.
The rft-endpoints README ("Train with other trainers") says what the door does about sessions, retries,
budgets and grading failures.
`;
}

const toolsTs = (tools: string[]): string => `- ${tools.join(', ')}: one tool per file (\`export default defineTool({...})\`), typed arguments (zod), the
  output the model reads. Files and folders starting with \`_\` are shared code, not tools.`;
const toolsPython = (files: string[]): string => `- ${files.join(', ')}: the tools, a FastMCP server (one \`@mcp.tool\` function per tool) and its Python
  requirements; \`mcp.json\` runs it in each rollout's sandbox (see Python tools above).`;

const unitsNote = `Units import this package by name: \`import { defineTool, z } from 'rft-endpoints'\`, the grading
helpers from \`rft-endpoints/grading\`, the sandbox API from \`rft-endpoints/sandbox\`. What a handler's \`ctx\`
holds (the rollout's calls and their fields, the budget, the sandbox) is in the rft-endpoints docs
(\`docs/units.md\`). \`npm run dev\` type-checks the units as it loads them (\`RFT_UNITS_TYPECHECK\`); to check
them yourself (and in your editor), \`npm install -D typescript @types/node\` and \`npm run typecheck\`
(\`tsconfig.json\`).
`;

function readme(t: TemplateInput): string {
  const tools = t.spec.python ? t.spec.python.files.map(([, to]) => `\`${to}\``) : t.spec.units.filter(([, to]) => to.startsWith('tools/')).map(([, to]) => `\`${to}\``);
  const graders = t.spec.units.filter(([, to]) => to.startsWith('graders/')).map(([, to]) => `\`${to}\``);
  const data = t.spec.assets.filter((a) => a.startsWith('examples/')).map((a) => `- \`${a}/\`: read by the units at this path (relative to their own files or to the sandbox templates root, \`./examples\`).`);
  const datasets = t.spec.datasets.map(([, to]) => `\`${to}\``).join(', ');
  return `# ${t.name}

An Agent RFT project served by rft-endpoints: the tool
endpoint and the reward grader endpoint of a reinforcement fine-tuning job. Started from the
\`${t.example}\` example: ${t.spec.summary}.

## Run it

\`\`\`sh
${t.spec.python ? 'npm install        # also makes .venv with FastMCP (tools/requirements.txt)' : 'npm install'}
npm start          # serves this project's tools and graders on http://127.0.0.1:8787
\`\`\`

With no key configured, \`npm start\` creates one in \`data/api-key\` and prints a \`curl\` to try. The
server loads only \`tools/\`${t.spec.python ? ' (its `.py` files through the MCP bridge)' : ''} and \`graders/\` of this folder (\`RFT_TOOLS_DIR\`, \`RFT_GRADERS_DIR\`).${t.spec.python ? '' : ' While you write them, `npm run dev` restarts the server whenever a file in `tools/`, `graders/` or `job.json` changes.'}
${t.spec.python ? '\n' + pythonSection(t.spec.python.tools) : ''}
## What is where

${t.spec.python ? toolsPython(tools) : toolsTs(tools)}
- ${graders.join(', ')}: the grader (\`defineGrader\`, an OpenAI grader config as \`.json\`, or \`grade(sample, item)\` in a \`.py\`).
${data.join('\n')}${data.length ? '\n' : ''}- ${datasets}: the dataset (JSONL). Each row carries \`messages\` (ending with the user's turn), the
  \`tools\` schemas (as \`GET /v1/tools\` prints them) and the fields the grader reads. Every \`*.jsonl\`
  here is a split named after its file (\`hard.jsonl\` is split \`hard\`; \`valid.jsonl\` is \`validation\`)
  for the doors that pick rows themselves (ORS, OpenEnv), except \`scripted.jsonl\` and \`*.gym.jsonl\`;
  an edited file is served without a restart.
- \`job.json\`: the fine-tuning job's settings (model, suffix, \`max_episode_steps\`, hyperparameters, the
  grader's \`rate_limit\` and \`pass_threshold\`). It names no tool or grader: the server serves every tool of
  \`tools/\` and the grader of \`graders/\`, so replacing a unit means changing those two folders and the
  dataset's rows, nothing else. Name units in \`method.reinforcement.tools\` or \`.grader\` only to serve
  fewer; a name the server did not load stops it at boot (\`RFT_ERR_JOB_UNITS\`).
- \`scripted.jsonl\`: scripted model turns per row (tool calls, then a final answer) for
  \`rollout --model scripted:scripted.jsonl\`, a rehearsal with no model; the format is in the rft-endpoints
  docs (\`docs/emulator.md\`).

${t.spec.python ? '' : unitsNote + '\n'}## Before a paid job

\`\`\`sh
${t.spec.python ? 'npm run check                                          # rows, tool schemas (of the running server), row count' : 'npx rft-endpoints dataset check train.jsonl            # rows, tool schemas, tool_budget, row count'}
npx rft-endpoints check-grader --dataset train.jsonl --grader ${t.spec.grader}
export RFT_API_KEY=$(cat data/api-key)                 # the key npm start made
npx rft-endpoints rollout --dataset train.jsonl --model scripted:scripted.jsonl -k 2 --out rehearsal.jsonl
npx rft-endpoints report rehearsal.jsonl
npx rft-endpoints rollout --dataset train.jsonl --model gpt-4.1-mini -k 4 --base-url http://127.0.0.1:8000/v1
\`\`\`

The scripted rollout plays \`scripted.jsonl\` in place of a model (no key, no network): the whole loop of
tool calls, grading, record and report, before any model is paid for. \`--temperature\` and
\`--reasoning-effort\` give a real model the job's settings.

\`dataset check\` exits 1 on any problem, with the row number and a code for each. After changing a
tool, regenerate the rows' \`tools\` from \`curl -H "Authorization: Bearer $KEY" http://127.0.0.1:8787/v1/tools\`.

## Register the job

Deploy on a public HTTPS address (\`RFT_TLS_CERT\`/\`RFT_TLS_KEY\`, or behind a TLS proxy with
\`RFT_TRUST_PROXY=1\`), create a key with \`npx rft-endpoints keys create\`, start with
\`RFT_API_KEYS=label:key HOST=0.0.0.0 npm start\`, and print the whole job request (\`job.json\` with this
server's tools and grader) with \`npx rft-endpoints job body --base-url https://YOUR-HOST\`. The rft-endpoints README has the full configuration.

${nemoGymSection(t)}
${orsSection(t.name)}
${openEnvSection(t.name, t.tools)}
${rewardDoorsSection(t.spec.grader)}`;
}

export function projectFiles(t: TemplateInput): Record<string, string> {
  return {
    'package.json': packageJson(t),
    'README.md': readme(t),
    '.gitignore': 'node_modules/\ndata/\n*.log\n.venv/\n',
    'tsconfig.json': tsconfigJson(),
    ...nemoGymFiles({ name: t.name, domain: t.spec.gymDomain, maxSteps: t.maxSteps }),
  };
}
