// An answer's output_json as the doors build a sample from text: the text parsed as JSON where it is
// JSON, else null.

/** What JSON text can start with (after whitespace): anything else cannot parse, so it is not tried. */
const JSON_START = /^\s*[[{"\-0-9tfn]/;

/** JSON.parse-or-null, without the parse's throw on a plain-text answer (about 20 us a sample). */
export function jsonOrNull(text: string): unknown {
  if (!JSON_START.test(text)) return null;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return null;
  }
}
