// A rollout's run label: which run (a baseline, a curl test, a training job) it belongs to, so the
// dashboard can tell runs apart. Sent as the `x-rft-run` header on /tools and /grade (and to the
// NeMo Gym door's /seed_session, or in its row's responses_create_params.metadata.rft_run); the
// first label a rollout gets is kept.
import { errors } from '../errors.js';

export const RUN_HEADER = 'x-rft-run';
/** The key of a NeMo Gym row's `responses_create_params.metadata` that names its run. */
export const RUN_METADATA_KEY = 'rft_run';
export const RUN_LABEL_MAX = 64;

// Printable ASCII: it is shown on the dashboard and put in URLs, and a header carries nothing else.
const LABEL = /^[\x21-\x7e](?:[\x20-\x7e]{0,62}[\x21-\x7e])?$/;

export const isRunLabel = (s: string): boolean => s.length <= RUN_LABEL_MAX && LABEL.test(s);

/** The label, or undefined when none is given; a coded 400 (RFT_ERR_BAD_RUN_LABEL) when it is not one. */
export function parseRunLabel(value: unknown, where: string): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw errors.badRunLabel(where, Array.isArray(value) ? 'given more than once' : 'not a string');
  if (value.length > RUN_LABEL_MAX) throw errors.badRunLabel(where, `${value.length} characters`);
  if (!LABEL.test(value)) throw errors.badRunLabel(where, value === '' ? 'empty' : 'a character outside printable ASCII, or a space at an end');
  return value;
}

/** The run label of a request's `x-rft-run` header (Node joins repeated headers with ", ", so a repeat reads as one odd label). */
export function runOfHeaders(headers: Record<string, string | string[] | undefined>): string | undefined {
  return parseRunLabel(headers[RUN_HEADER], `header ${RUN_HEADER}`);
}
