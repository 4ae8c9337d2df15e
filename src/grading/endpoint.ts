// graders/*.json served as endpoint graders: the loader validates the file and wraps it here. The
// endpoint score is OpenAI's `reward`, the subscores its `sub_rewards`, and the version a hash of
// the canonical config, so reformatting the file does not change it but editing a field does.
import { createHash } from 'node:crypto';
import type { GraderDefinition, GraderResult } from '../registry/define.js';
import { defineGrader } from '../registry/define.js';
import type { GraderConfig } from './config.js';
import type { ModelOptions } from './model-client.js';
import { runGraderConfig } from './run.js';
import { canonicalJson } from '../protocol/canonical.js';

export function configVersion(config: GraderConfig): string {
  return 'cfg-' + createHash('sha256').update(canonicalJson(config)).digest('hex').slice(0, 16);
}

export interface FromConfigOptions {
  openai?: ModelOptions;
  /** The endpoint name (the loader passes the file name); defaults to config.name. */
  name?: string;
}

export function graderFromConfig(config: GraderConfig, opts: FromConfigOptions = {}): GraderDefinition {
  return defineGrader({
    name: opts.name ?? config.name,
    description: `OpenAI ${config.type} grader "${config.name}" run locally`,
    version: configVersion(config),
    handler: async ({ sample, item }, ctx): Promise<GraderResult> => {
      const r = await runGraderConfig(config, sample, item, {
        signal: ctx.signal,
        python: { sandbox: () => ctx.freshSandbox() },
        ...(opts.openai !== undefined ? { openai: opts.openai } : {}),
      });
      return {
        score: r.reward,
        ...(Object.keys(r.sub_rewards).length > 0 ? { subscores: r.sub_rewards } : {}),
        ...(r.explanation !== undefined ? { explanation: r.explanation } : {}),
      };
    },
  });
}
