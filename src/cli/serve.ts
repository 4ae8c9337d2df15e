// `rft-endpoints serve`: what `npm start` runs.
import type { Command } from 'commander';
import { runServer } from '../server.js';

export function register(program: Command): void {
  program
    .command('serve')
    .description('start the tool and grader endpoints (configuration from the environment and --config)')
    .option('-c, --config <file>', 'JSON config file (same names as the environment variables)')
    .option('-p, --port <port>', 'port (PORT)')
    .option('--host <host>', 'address to listen on (HOST)')
    .action(async (opts: { config?: string; port?: string; host?: string }) => {
      const overrides = { ...(opts.port ? { PORT: opts.port } : {}), ...(opts.host ? { HOST: opts.host } : {}) };
      await runServer({ configFile: opts.config, overrides });
    });
}
