// The options of every command that talks to a running server. Declaring them reads nothing: the
// environment fallbacks (RFT_SERVER, RFT_API_KEY, RFT_SIGNING_SECRET) are applied by clientFrom.
import type { Command } from 'commander';

export const DEFAULT_SERVER = 'http://127.0.0.1:8787';

export interface ServerOptions {
  server?: string;
  key?: string;
  signingSecret?: string;
}

export function withServerOptions(cmd: Command): Command {
  return cmd
    .option('--server <url>', `rft-endpoints server URL (env RFT_SERVER, default ${DEFAULT_SERVER})`)
    .option('--key <key>', 'API key sent as a bearer token (env RFT_API_KEY)')
    .option('--signing-secret <whsec>', 'sign requests with this Standard Webhooks secret instead (env RFT_SIGNING_SECRET)');
}
