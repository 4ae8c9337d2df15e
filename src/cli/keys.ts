// `rft-endpoints keys create`: a new static key and the snippet to paste into the job.
import type { Command } from 'commander';
import { generateKey } from '../authentication/authenticator.js';
import { headerSnippet, keyHeaders } from '../authentication/key-headers.js';
import { keyHeaderList, loadCliEnv } from '../config.js';

export function register(program: Command): void {
  const keys = program.command('keys').description('manage API keys');
  keys
    .command('create')
    .description('print a new API key, the RFT_API_KEYS entry and the job headers snippet')
    .option('-l, --label <label>', 'label recorded on every call made with this key', 'trainer')
    .option('--header <name>', 'header the job sends the key in (default: the first of RFT_API_KEY_HEADERS, else Authorization)')
    .action((opts: { label: string; header?: string }) => {
      if (!/^[A-Za-z0-9_.-]{1,64}$/.test(opts.label)) {
        process.stderr.write('error RFT_ERR_BAD_REQUEST: --label must match [A-Za-z0-9_.-]{1,64}\n');
        process.exitCode = 2;
        return;
      }
      const configured = loadCliEnv().RFT_API_KEY_HEADERS ?? ['Authorization'];
      const name = opts.header ?? configured[0]!;
      const valid = keyHeaderList.safeParse([name]);
      if (!valid.success) {
        process.stderr.write(`error RFT_ERR_BAD_REQUEST: --header: ${valid.error.issues[0]!.message}\n`);
        process.exitCode = 2;
        return;
      }
      const [header] = keyHeaders([name]);
      const key = generateKey();
      const listed = configured.some((c) => c.toLowerCase() === header!.name);
      process.stdout.write(
        `key: ${key}\n\n` +
          `server (add to the comma-separated list to rotate without downtime):\n  RFT_API_KEYS=${opts.label}:${key}\n` +
          (listed ? '' : `  RFT_API_KEY_HEADERS=${[...configured, name].join(',')}\n`) +
          `\njob (method.reinforcement.tools[].headers and grader.headers):\n  ${JSON.stringify(headerSnippet(header!, key))}\n`,
      );
    });
}
