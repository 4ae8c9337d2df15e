// verl's rows as the parquet file its RLHFDataset reads (datasets' parquet loader): an explicit schema,
// every column required, so each row reads back with the same columns and types, `prompt` a list of
// {role, content} structs (verl applies the chat template to it), `extra_info.index` an int64.
import { parquetWriteBuffer, type SchemaElement } from 'hyparquet-writer';
import type { VerlRow } from './trainer-rows.js';

const text = (name: string): SchemaElement => ({ name, type: 'BYTE_ARRAY', converted_type: 'UTF8', repetition_type: 'REQUIRED' });

const SCHEMA: SchemaElement[] = [
  { name: 'root', num_children: 5 },
  text('data_source'),
  // The three-level LIST of the parquet format: prompt (LIST) > list (repeated) > element.
  { name: 'prompt', repetition_type: 'REQUIRED', converted_type: 'LIST', num_children: 1 },
  { name: 'list', repetition_type: 'REPEATED', num_children: 1 },
  { name: 'element', repetition_type: 'REQUIRED', num_children: 2 },
  text('role'),
  text('content'),
  text('ability'),
  { name: 'reward_model', repetition_type: 'REQUIRED', num_children: 2 },
  text('style'),
  text('ground_truth'),
  { name: 'extra_info', repetition_type: 'REQUIRED', num_children: 1 },
  { name: 'index', type: 'INT64', repetition_type: 'REQUIRED' },
];

export function verlParquet(rows: readonly VerlRow[]): Buffer {
  const column = <K extends keyof VerlRow>(name: K, map: (v: VerlRow[K]) => unknown = (v) => v) => ({ name, data: rows.map((r) => map(r[name])) });
  const buf = parquetWriteBuffer({
    schema: SCHEMA,
    columnData: [
      column('data_source'),
      column('prompt'),
      column('ability'),
      column('reward_model'),
      column('extra_info', (e) => ({ index: BigInt(e.index) })),
    ],
    createdBy: 'rft-endpoints dataset convert',
  });
  return Buffer.from(buf);
}
