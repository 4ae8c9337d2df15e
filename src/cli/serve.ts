// `rft-endpoints serve`: what `npm start` runs.
import type { Command } from 'commander';

interface ServeOptions {
  config?: string;
  port?: string;
  host?: string;
  tools?: string;
  graders?: string;
}

export function register(program: Command): void {
  program
    .command('serve')
    .description('start the tool and grader endpoints (configuration from the environment and --config)')
    .option('-c, --config <file>', 'JSON config file (same names as the environment variables)')
    .option('-p, --port <port>', 'port (PORT)')
    .option('--host <host>', 'address to listen on (HOST)')
    .option('--tools <dir>', 'tool units folder (RFT_TOOLS_DIR, default ./tools)')
    .option('--graders <dir>', 'grader units folder (RFT_GRADERS_DIR, default ./graders)')
    .action(async (opts: ServeOptions) => {
      const overrides = {
        ...(opts.port ? { PORT: opts.port } : {}),
        ...(opts.host ? { HOST: opts.host } : {}),
        ...(opts.tools ? { RFT_TOOLS_DIR: opts.tools } : {}),
        ...(opts.graders ? { RFT_GRADERS_DIR: opts.graders } : {}),
      };
      const { runServer } = await import('../server.js');
      await runServer({ configFile: opts.config, overrides });
    });
}
