// What the boot message says about credentials: which keys the server accepts, and where. Setting
// RFT_API_KEYS (or RFT_SIGNING_SECRETS) turns the generated key in the data dir off, and the CLI and
// dashboard that were using it then get 401s: the message says so rather than letting it happen silently.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { AppConfig } from '../config.js';
import { describeKeyHeaders, keyHeaders } from './key-headers.js';

export interface LocalKeyState {
  created: boolean;
  path: string;
}

/** The generated key's file in a data dir (whether or not it is in use). */
export function localKeyPath(dataDir: string): string {
  return join(dataDir, 'api-key');
}

/** Lines for the terminal (never the JSON logs): the active credentials; never a key itself. */
export function credentialsNote(config: Pick<AppConfig, 'apiKeys' | 'signingSecrets' | 'dataDir' | 'apiKeyHeaders'>, localKey: LocalKeyState | undefined): string {
  const where = describeKeyHeaders(keyHeaders(config.apiKeyHeaders));
  const lines: string[] = [];
  if (localKey) {
    lines.push(`Credentials: the generated key in ${localKey.path} (label "local"), sent as ${where}`);
    return lines.join('\n') + '\n';
  }
  if (config.apiKeys.length > 0) {
    const labels = config.apiKeys.map((k) => k.label);
    lines.push(`Credentials: the keys of RFT_API_KEYS (labels: ${labels.join(', ')}), sent as ${where}`);
  }
  if (config.signingSecrets.length > 0) {
    lines.push(`Credentials: Standard Webhooks signatures with the secrets of RFT_SIGNING_SECRETS (${config.signingSecrets.length})`);
  }
  const generated = localKeyPath(config.dataDir);
  if (lines.length > 0 && existsSync(generated)) {
    const set = config.apiKeys.length > 0 ? 'RFT_API_KEYS' : 'RFT_SIGNING_SECRETS';
    lines.push(
      `  The generated key in ${generated} is OFF because ${set} is set: a CLI or dashboard using it gets 401. ` +
        `Use one of the keys above (--key, RFT_API_KEY), or keep it by adding local:$(cat ${generated}) to RFT_API_KEYS.`,
    );
  }
  return lines.length > 0 ? lines.join('\n') + '\n' : '';
}
