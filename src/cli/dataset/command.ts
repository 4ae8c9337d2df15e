// `rft-endpoints dataset check FILE`: checks a dataset against the tools and the grader it will
// meet, those of this project's folders (as `serve` would load them) or of a running server.
// `dataset convert FILE --to nemo-gym|trl|verl|slime|openrlhf`: the same rows in another trainer's row format.
import type { Command } from 'commander';
import type { ConvertOptions } from './convert.js';
import type { DatasetCheckOptions } from './sources.js';
import { withServerOptions } from '../server-options.js';

async function checkAction(file: string, opts: DatasetCheckOptions): Promise<void> {
  const { runDatasetCheck } = await import('./sources.js');
  const ok = await runDatasetCheck(file, opts);
  if (!ok) process.exitCode = 1;
}

export function register(program: Command): void {
  const dataset = program.command('dataset').description('dataset tools');
  withServerOptions(
    dataset
      .command('check')
      .description(
        'check a dataset JSONL: messages end with a user message, tools match the served tools by name and schema, tool_budget, ' +
          "the fields the grader reads, the trainer's minimum row count; exit 1 on any problem",
      )
      .argument('<file>', 'dataset JSONL (one row per line)')
      .option('--grader <name>', "the job's grader (default: the one behind POST /grade)")
      .option('--min-rows <n>', 'rows the file must hold (default 10, the trainer\'s minimum for a training file)')
      .option('--validation', 'a validation file: no minimum row count')
      .option('--json <out>', 'also write the report as JSON')
      .option('-c, --config <file>', 'JSON config file, as for serve (RFT_TOOLS_DIR, RFT_GRADERS_DIR...)'),
  )
    .addHelpText('after', '\nWithout --server (or RFT_SERVER) the tools and graders are loaded from this folder (./tools, ./graders), as `serve` would load them.')
    .action(checkAction);
  dataset
    .command('convert')
    .description(
      "write an Agent RFT dataset in another trainer's row format, each row with what this server's door for that trainer grades with: " +
        'nemo-gym (responses_create_params, the other fields kept), trl (prompt, split, index, the other fields), ' +
        'slime and openrlhf (JSONL: prompt, label = the grader fields as JSON text), verl (parquet: data_source, prompt, ability, reward_model, extra_info)',
    )
    .argument('<file>', 'Agent RFT dataset JSONL (messages, tools, the fields the grader reads); with --from harbor, a folder of Harbor tasks')
    .requiredOption('--to <format>', 'the row format: nemo-gym, trl, verl, slime, openrlhf (agent-rft: with --from harbor, the rows as the server serves them)')
    .option('--from <format>', 'harbor: <file> is a folder of Harbor tasks (a tree of task folders, dataset.toml or registry.json; docs/harbor.md)')
    .option('--tools-dir <dir>', '--from harbor: the tools folder the server loads, whose harness tools the rows carry (default RFT_TOOLS_DIR, else ./tools)')
    .option('--out <file>', 'write here (whole or not at all) instead of standard output (required for verl)')
    .option('--agent <name>', "nemo-gym: set each row's agent_ref (the Gym agent that plays it), else ng_collect_rollouts +agent_name=NAME does")
    .option('--split <name>', "trl: the environment split the file is (train, validation), which the OpenEnv door's reset names; default: the file's name beside a job.json")
    .option('--data-source <name>', "verl: each row's data_source (default: the environment's folder name, else rft-endpoints)")
    .action(async (file: string, opts: ConvertOptions) => {
      const { runDatasetConvert } = await import('./convert.js');
      await runDatasetConvert(file, opts);
    });
}
