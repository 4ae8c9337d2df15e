// Rows as Postgres returns them (int8 already parsed to number, booleans as booleans, free text
// NUL-encoded by pg-text.ts) and their mapping to the store's records.
import { decodeText } from './pg-text.js';
import { rowMappers, type CallRowShape, type GradeRow, type RolloutRowShape } from './rows.js';

export interface PgCallRow extends CallRowShape<boolean> {
  owner: string | null;
}
export type PgRolloutRow = RolloutRowShape<boolean>;
export type PgGradeRow = GradeRow;

export const { toCall, toGrade, toSummary, budgetOf } = rowMappers<boolean>({ text: decodeText, bool: (b) => b });
