// An environment: a named set of tools, a grader and dataset splits. The tools are the only ones its
// rollouts may call (a finqa rollout cannot reach the coding shell); the splits are JSONL files of
// Agent RFT rows, read when a door asks for them (not at boot: a dataset may be large).
import { readFile } from 'node:fs/promises';
import { errors } from '../errors.js';

export type SplitName = 'train' | 'validation';
export const SPLIT_NAMES: readonly SplitName[] = ['train', 'validation'];

export interface Environment {
  name: string;
  /** The folder it was found in (its job.json is there). */
  dir: string;
  /** Its tools, in job.json's order. */
  tools: readonly string[];
  grader: string;
  /** JSONL file of each split it has. */
  splits: Partial<Record<SplitName, string>>;
}

export type Row = Record<string, unknown>;

/** The environments of this server, by name, and the one a row belongs to. */
export class Environments {
  private readonly byName: Map<string, Environment>;

  constructor(list: readonly Environment[]) {
    this.byName = new Map(list.map((e) => [e.name, e]));
  }

  list(): Environment[] {
    return [...this.byName.values()];
  }

  get(name: string): Environment {
    const env = this.byName.get(name);
    if (!env) throw errors.unknownEnvironment(name, [...this.byName.keys()]);
    return env;
  }

  /**
   * The environment whose tools include every one of `tools` (the row's tools decide, as they do
   * for Agent RFT); undefined when none or several do and nothing tells them apart.
   */
  forTools(tools: readonly string[]): Environment | undefined {
    const fits = this.list().filter((e) => tools.every((t) => e.tools.includes(t)));
    return fits.length === 1 ? fits[0] : undefined;
  }

  /** The rows of a split, parsed (a bad line names its file and line). */
  async rows(name: string, split: SplitName): Promise<Row[]> {
    const env = this.get(name);
    const file = env.splits[split];
    if (!file) throw errors.notFound(`split "${split}" of environment "${name}"`);
    const text = await readFile(file, 'utf8');
    return text.split('\n').flatMap((line, i) => {
      if (!line.trim()) return [];
      try {
        const row: unknown = JSON.parse(line);
        if (!row || typeof row !== 'object' || Array.isArray(row)) throw new Error('a row must be a JSON object');
        return [row as Row];
      } catch (e) {
        throw errors.environmentLoad(env.dir, `${file} line ${i + 1}: ${(e as Error).message}`);
      }
    });
  }
}
