// An answer's output_json as the doors build a sample from text: the text parsed as JSON where it is
// JSON, else null; and past the caps (RFT_BODY_LIMIT_BYTES, RFT_MAX_JSON_DEPTH) null too, as POST
// /graders makes a sample.output_json nested deeper than RFT_MAX_JSON_DEPTH (src/http/json-body.ts):
// the answer is then graded as its text. How deep the model nests its answer is the model's doing, so
// it must never make the grade fail (a 5xx turns the model's zero into a discarded rollout).
import { jsonDepthExceeds } from './json-depth.js';
import type { Sample } from './wire.js';

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

/** The caps an answer's JSON is parsed under: the server's body limit and JSON depth (src/config.ts). */
export interface AnswerLimits {
  maxBytes: number;
  maxDepth: number;
}

/** The answer's output_json: jsonOrNull, or null when the text is longer or nests deeper than the caps. */
export function answerJson(text: string, limits: AnswerLimits): unknown {
  if (Buffer.byteLength(text) > limits.maxBytes) return null;
  if (jsonDepthExceeds(text, limits.maxDepth)) return null;
  return jsonOrNull(text);
}

/** The sample a grader sees of an answer given as text (Agent RFT's sample shape): the one place a door's answer is parsed. */
export function answerSample(text: string, limits: AnswerLimits): Sample {
  return { output_text: text, output_json: answerJson(text, limits), output_tools: [], choices: [] };
}
