// Postgres `text` cannot hold U+0000, which SQLite and JSON strings can (a tool may print a NUL byte,
// a model may send one in raw arguments). Such strings are stored as a marker plus their JSON form,
// so every string round-trips exactly and ordinary text stays readable in SQL.
const MARK = '\u0001';

export function encodeText(s: string): string {
  return s.includes('\0') || s.startsWith(MARK) ? MARK + JSON.stringify(s) : s;
}

export function decodeText(s: string): string {
  return s.startsWith(MARK) ? (JSON.parse(s.slice(1)) as string) : s;
}

export const encodeNullable = (s: string | null): string | null => (s === null ? null : encodeText(s));
export const decodeNullable = (s: string | null): string | null => (s === null ? null : decodeText(s));
