// An environment: a named set of tools, a grader and dataset splits. The tools are the only ones its
// rollouts may call (a finqa rollout cannot reach the coding shell); the splits are the JSONL files of
// Agent RFT rows in its folder (dataset.ts), read when a door asks for them (not at boot: a dataset may
// be large) and read again when they change.
import { errors } from '../errors.js';
import type { Dataset, Row } from './dataset.js';

export type { Row } from './dataset.js';
/** A split is named after its file: train.jsonl is `train`, hard.jsonl is `hard` (dataset.ts). */
export type SplitName = string;

export interface Environment {
  name: string;
  /** The folder it was found in (its job.json is there). */
  dir: string;
  /** Its tools, in job.json's order. */
  tools: readonly string[];
  grader: string;
  /** Its splits, as its folder holds them now (a Harbor dataset's: src/harbor/environment.ts). */
  dataset: Pick<Dataset, 'splits' | 'rows'>;
}

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

  /** The splits an environment has now (train, validation, then the rest by name). */
  splits(name: string): SplitName[] {
    return this.get(name).dataset.splits();
  }

  /** The rows of a split, parsed whole (a bad line names its file and line). */
  rows(name: string, split: SplitName): Promise<Row[]> {
    return this.get(name).dataset.rows(split);
  }
}
