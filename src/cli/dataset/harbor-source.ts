// `dataset convert --from harbor DIR`: a folder of Harbor tasks (src/harbor/dataset.ts) as the Agent
// RFT rows the server's Harbor environment serves (the same ids, splits, order and tools), ready for
// the converters of convert.ts. The tools' definitions come from the tools folder the server loads
// (RFT_TOOLS_DIR, default ./tools), which must hold the harness (shell and the file tools).
import { basename, resolve } from 'node:path';
import { errors } from '../../errors.js';
import { HARBOR_TOOLS, harborRow, readHarborDataset } from '../../harbor/dataset.js';
import { chatCompletionsTools, loadRegistry } from '../../registry/loader.js';

export interface HarborSourceRow {
  row: Record<string, unknown>;
  split: string;
  /** Its index within its split, as the OpenEnv door's reset(split, index) names it. */
  index: number;
}

export interface HarborSource {
  environment: string;
  rows: HarborSourceRow[];
  invalid: { dir: string; code: string; reason: string }[];
}

export async function readHarborSource(dir: string, toolsDir: string): Promise<HarborSource> {
  const root = resolve(dir);
  const ds = readHarborDataset(root);
  // Only the tools are wanted: a graders folder that does not exist loads none.
  const registry = await loadRegistry({ toolsDir: resolve(toolsDir), gradersDir: resolve(toolsDir, '.none') });
  const missing = HARBOR_TOOLS.filter((t) => !registry.tools.has(t));
  if (missing.length > 0) throw errors.cliUsage(`${toolsDir} lacks the Harbor harness tools ${missing.join(', ')} (docs/harbor.md): name the tools folder the server loads with RFT_TOOLS_DIR`);
  const tools = chatCompletionsTools(registry, HARBOR_TOOLS);
  const environment = basename(root);
  const perSplit = new Map<string, number>();
  const rows = ds.tasks.map(({ split, task }) => {
    const index = perSplit.get(split) ?? 0;
    perSplit.set(split, index + 1);
    return { row: harborRow(environment, task, tools), split, index };
  });
  if (rows.length === 0 && ds.invalid.length === 0) throw errors.cliUsage(`${dir} holds no Harbor task (a folder with task.toml), dataset.toml or registry.json`);
  return { environment, rows, invalid: ds.invalid };
}
