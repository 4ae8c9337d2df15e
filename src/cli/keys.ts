// `rft-endpoints keys create`: a new static key and the snippet to paste into the job.
import type { Command } from 'commander';
import { generateKey } from '../authentication/authenticator.js';

export function register(program: Command): void {
  const keys = program.command('keys').description('manage API keys');
  keys
    .command('create')
    .description('print a new API key, the RFT_API_KEYS entry and the job headers snippet')
    .option('-l, --label <label>', 'label recorded on every call made with this key', 'trainer')
    .action((opts: { label: string }) => {
      if (!/^[A-Za-z0-9_.-]{1,64}$/.test(opts.label)) {
        process.stderr.write('error RFT_ERR_BAD_REQUEST: --label must match [A-Za-z0-9_.-]{1,64}\n');
        process.exitCode = 2;
        return;
      }
      const key = generateKey();
      process.stdout.write(
        `key: ${key}\n\n` +
          `server (add to the comma-separated list to rotate without downtime):\n  RFT_API_KEYS=${opts.label}:${key}\n\n` +
          `job (method.reinforcement.tools[].headers and grader.headers):\n  ${JSON.stringify({ Authorization: `Bearer ${key}` })}\n`,
      );
    });
}
