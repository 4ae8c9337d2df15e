// `rft-endpoints init DIR --example harbor`: a folder of Harbor tasks served as one environment (docs/harbor.md).
// Not a job.json project: the folder itself is the environment (named after it; its tasks/ the split
// `train`), its tools/ the harness units the server loads (shell and the file tools, with their _lib
// code), and its grader the server's built-in `harbor`. The tasks are this package's examples/harbor.
import { cpSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { HARBOR_TOOLS } from '../../harbor/dataset.js';

/**
 * Writes the project into `staging` (initProject renames it into place); returns the number of files.
 * `importClosure`: a unit and the modules it imports relatively (project.ts's, passed in: it imports this file).
 */
export function writeHarborProject(root: string, staging: string, name: string, dependency: string, importClosure: (root: string, entry: string) => string[]): number {
  let files = 0;
  for (const tool of HARBOR_TOOLS) {
    for (const file of importClosure(root, `tools/${tool}.ts`)) {
      mkdirSync(dirname(join(staging, file)), { recursive: true });
      cpSync(join(root, file), join(staging, file));
      files++;
    }
  }
  const from = join(root, 'examples', 'harbor');
  for (const task of readdirSync(from, { withFileTypes: true }).filter((e) => e.isDirectory())) {
    cpSync(join(from, task.name), join(staging, 'tasks', task.name), { recursive: true });
    files++;
  }
  const pkg = {
    name: name.toLowerCase().replace(/[^a-z0-9._-]+/g, '-').replace(/^[._-]+/, '') || 'rft-project',
    version: '0.1.0',
    private: true,
    type: 'module',
    engines: { node: '>=22' },
    scripts: {
      start: 'RFT_SANDBOX=${RFT_SANDBOX:-docker} rft-endpoints serve',
      check: 'RFT_SANDBOX=${RFT_SANDBOX:-docker} rft-endpoints harbor check .',
      rows: 'rft-endpoints dataset convert --from harbor . --to agent-rft --out train.jsonl',
    },
    dependencies: { 'rft-endpoints': dependency },
  };
  const readme = `# ${name}

Harbor tasks served as one environment, \`${name}\`, by rft-endpoints (its docs/harbor.md says all of it).
Each folder of \`tasks/\` is a task (\`task.toml\`, \`instruction.md\`, \`environment/\`, \`tests/test.sh\`,
\`solution/solve.sh\`): its image is the rollout's sandbox (Docker), \`shell\` and the file tools of \`tools/\` run
in its workdir, its tests are the grade. Add a task by adding its folder; the server reads them at start.

\`\`\`sh
npm install
npm run check        # each task: its image builds, its oracle scores 1, a no-op at most 0.05
npm start            # RFT_SANDBOX=docker; RFT_PRIVATE_PORT=8790 adds the OpenEnv door, RFT_NEMO_GYM_PORT NeMo Gym's
npm run rows         # train.jsonl: the rows the environment serves, for an Agent RFT job
\`\`\`

Rows are \`{id, messages: [the instruction], tools, sandbox: {harbor: "${name}/<task>"}}\`. Other trainers' rows:
\`npx rft-endpoints dataset convert --from harbor . --to nemo-gym\` (or \`trl\`, for the OpenEnv door).
`;
  writeFileSync(join(staging, 'package.json'), `${JSON.stringify(pkg, null, 2)}\n`);
  writeFileSync(join(staging, 'README.md'), readme);
  writeFileSync(join(staging, '.gitignore'), 'node_modules/\ndata/\n*.log\ntrain.jsonl\n');
  return files + 3;
}

export const HARBOR_EXAMPLE = 'harbor';
