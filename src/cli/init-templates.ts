// The text files of a new project: package.json, README.md, .gitignore. The project depends on
// rft-endpoints alone (its units import zod as \`z\` from it), so \`npm install\` adds nothing else.
import type { ExampleName, ExampleSpec } from './init-examples.js';

export interface TemplateInput {
  name: string;
  example: ExampleName;
  spec: ExampleSpec;
  dependency: string;
}

const npmName = (dir: string): string => dir.toLowerCase().replace(/[^a-z0-9._-]+/g, '-').replace(/^[._-]+/, '') || 'rft-project';

function packageJson(t: TemplateInput): string {
  const pkg = {
    name: npmName(t.name),
    version: '0.1.0',
    private: true,
    type: 'module',
    engines: { node: '>=20.18.1' },
    scripts: {
      start: 'rft-endpoints serve',
      check: 'rft-endpoints dataset check train.jsonl',
    },
    dependencies: { 'rft-endpoints': t.dependency },
  };
  return JSON.stringify(pkg, null, 2) + '\n';
}

function readme(t: TemplateInput): string {
  const tools = t.spec.units.filter(([, to]) => to.startsWith('tools/')).map(([, to]) => `\`${to}\``);
  const graders = t.spec.units.filter(([, to]) => to.startsWith('graders/')).map(([, to]) => `\`${to}\``);
  const data = t.spec.assets.filter((a) => a.startsWith('examples/')).map((a) => `- \`${a}/\`: read by the units at this path (relative to their own files or to the sandbox templates root, \`./examples\`).`);
  const datasets = t.spec.datasets.map(([, to]) => `\`${to}\``).join(', ');
  return `# ${t.name}

An Agent RFT project served by rft-endpoints: the tool
endpoint and the reward grader endpoint of a reinforcement fine-tuning job. Started from the
\`${t.example}\` example: ${t.spec.summary}.

## Run it

\`\`\`sh
npm install
npm start          # serves this project's tools and graders on http://127.0.0.1:8787
\`\`\`

With no key configured, \`npm start\` creates one in \`data/api-key\` and prints a \`curl\` to try. The
server loads only \`tools/\` and \`graders/\` of this folder (\`RFT_TOOLS_DIR\`, \`RFT_GRADERS_DIR\`).

## What is where

- ${tools.join(', ')}: one tool per file (\`export default defineTool({...})\`), typed arguments (zod), the
  output the model reads. Files and folders starting with \`_\` are shared code, not tools.
- ${graders.join(', ')}: the grader (\`defineGrader\`, or an OpenAI grader config as \`.json\`).
${data.join('\n')}${data.length ? '\n' : ''}- ${datasets}: the dataset (JSONL). Each row carries \`messages\` (ending with the user's turn), the
  \`tools\` schemas (as \`GET /v1/tools\` prints them) and the fields the grader reads.
- \`job.json\`: the fine-tuning job body; replace \`YOUR-HOST\` and \`YOUR_KEY\`.

Units import this package by name: \`import { defineTool, z } from 'rft-endpoints'\`, the grading
helpers from \`rft-endpoints/grading\`, the sandbox API from \`rft-endpoints/sandbox\`. The server runs
them through tsx, without type checking; to check them, \`npm install -D typescript @types/node\` and run
\`npx tsc --noEmit --module nodenext --strict tools/*.ts graders/*.ts\`.

## Before a paid job

\`\`\`sh
npx rft-endpoints dataset check train.jsonl            # rows, tool schemas, tool_budget, row count
npx rft-endpoints check-grader --dataset train.jsonl --grader ${t.spec.grader}
npx rft-endpoints rollout --dataset train.jsonl --model gpt-4.1-mini -k 4 --base-url http://127.0.0.1:8000/v1
\`\`\`

\`dataset check\` exits 1 on any problem, with the row number and a code for each. After changing a
tool, regenerate the rows' \`tools\` from \`curl -H "Authorization: Bearer $KEY" http://127.0.0.1:8787/v1/tools\`.

## Register the job

Deploy on a public HTTPS address (\`RFT_TLS_CERT\`/\`RFT_TLS_KEY\`, or behind a TLS proxy with
\`RFT_TRUST_PROXY=1\`), create a key with \`npx rft-endpoints keys create\`, start with
\`RFT_API_KEYS=label:key HOST=0.0.0.0 npm start\`, and get the job's \`method.reinforcement\` fragment from
\`GET /v1/job-config?base_url=https://YOUR-HOST\`. The rft-endpoints README has the full configuration.
`;
}

export function projectFiles(t: TemplateInput): Record<string, string> {
  return {
    'package.json': packageJson(t),
    'README.md': readme(t),
    '.gitignore': 'node_modules/\ndata/\n*.log\n',
  };
}
