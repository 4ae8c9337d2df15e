// Where `rollout --model` is: `scripted:FILE` and `replay:EXPORT` start the scripted server in this
// process (127.0.0.1, ephemeral port: no key, no network); any other name is a real model at the
// endpoint modelEndpoint() names.
import { errors } from '../../errors.js';
import type { DatasetRow } from '../rollout/dataset.js';
import { modelEndpoint } from '../rollout/model.js';
import { scriptFromExport } from './replay-script.js';
import { scriptFromFile } from './scripted-file.js';
import { startScriptedModel } from './scripted-server.js';

export interface ModelSource {
  baseURL: string;
  apiKey?: string;
  /** Stops the in-process model, if any. */
  close(): Promise<void>;
}

const LOCAL = { 'scripted:': scriptFromFile, 'replay:': scriptFromExport } as const;

export async function openModel(model: string, rows: readonly DatasetRow[], baseUrl: string | undefined): Promise<ModelSource> {
  const prefix = (Object.keys(LOCAL) as (keyof typeof LOCAL)[]).find((p) => model.startsWith(p));
  if (!prefix) return { ...modelEndpoint(baseUrl), close: async () => undefined };
  const file = model.slice(prefix.length);
  if (file === '') throw errors.cliUsage(`--model ${prefix}FILE needs a file name`);
  if (baseUrl !== undefined) throw errors.cliUsage(`--model ${prefix}FILE is served in this process: drop --base-url`);
  const server = await startScriptedModel({ script: LOCAL[prefix](file, rows) });
  return { baseURL: server.baseURL, close: () => server.close() };
}
