// `rft-endpoints init DIR`: a project of one's own (its package.json, tools/, graders/, a dataset,
// job.json and a README), started from one of the shipped examples.
import type { Command } from 'commander';

export function register(program: Command): void {
  program
    .command('init')
    .description('create a project folder with its own tools, graders, dataset, job.json and package.json (npm install && npm start)')
    .argument('<dir>', 'the new project folder (must not exist, or be empty)')
    .option('--example <name>', 'what to start from: finqa, coding, blank, python or harbor (a folder of Harbor tasks, docs/harbor.md)', 'blank')
    .option('--package <spec>', 'how the project depends on rft-endpoints (a version range, a tarball from `npm pack`, a folder); default: this copy')
    .action(async (dir: string, opts: { example: string; package?: string }) => {
      const { initProject } = await import('./project.js');
      const done = initProject({ dir, example: opts.example, ...(opts.package !== undefined ? { packageSpec: opts.package } : {}) });
      if (done.example === 'harbor') {
        process.stdout.write(
          `created ${done.dir} (harbor: ${done.files} files, rft-endpoints ${done.dependency})\n\n` +
            `  cd ${done.dir}\n  npm install\n  npm run check             # each task's oracle and a no-op episode, on Docker\n  npm start                 # the tasks as one environment (RFT_SANDBOX=docker)\n\n` +
            `README.md says what is where.\n`,
        );
        return;
      }
      process.stdout.write(
        `created ${done.dir} (${done.example}: ${done.files} files, rft-endpoints ${done.dependency})\n\n` +
          `  cd ${done.dir}\n  npm install\n  npm start                 # serves only this project's tools and graders\n` +
          `  ${done.example === 'python' ? 'npm run check             # the dataset against the running server' : 'npx rft-endpoints dataset check train.jsonl'}\n\n` +
          `README.md says what is where and how to register the job.\n`,
      );
    });
}
