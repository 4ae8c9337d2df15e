// A rollout's run label: which run (a baseline, a curl test, a training job) it belongs to, so the
// dashboard can tell runs apart. Sent as the `x-rft-run` header on /tools and /grade (and to the
// NeMo Gym door's /seed_session, or in its row's responses_create_params.metadata.rft_run); the
// first label a rollout gets is kept. A client that sends no header of ours but takes a URL (OpenEnv's,
// slime's, OpenRLHF's) puts it in the URL's `run` query parameter (`ws://host/finqa/ws?run=x`,
// `/reward/{grader}?run=x`), and a session's parameters can carry it as `run` (OpenEnv's reset data,
// ORS's /create body).
import { errors } from '../errors.js';

export const RUN_HEADER = 'x-rft-run';
/** The key of a NeMo Gym row's `responses_create_params.metadata` that names its run. */
export const RUN_METADATA_KEY = 'rft_run';
/** The query parameter (and session field) that names a run where a client sends no header of ours. */
export const RUN_PARAM = 'run';
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

/**
 * The label of the first place that gives one, in the order given (a header before the URL before a body's
 * field): each given is checked, so a malformed label anywhere is the coded 400, never silently passed over.
 */
export function firstRunLabel(...places: readonly (readonly [value: unknown, where: string])[]): string | undefined {
  const labels = places.map(([value, where]) => parseRunLabel(value, where));
  return labels.find((l) => l !== undefined);
}

/** A request's label: its `x-rft-run` header, else its URL's `run` query parameter. */
export function runOfRequest(req: { headers: Record<string, string | string[] | undefined>; query?: unknown }): string | undefined {
  const query = req.query && typeof req.query === 'object' ? (req.query as Record<string, unknown>)[RUN_PARAM] : undefined;
  return firstRunLabel([req.headers[RUN_HEADER], `header ${RUN_HEADER}`], [query, `query parameter ${RUN_PARAM}`]);
}

/** The `run` query parameter of a raw request URL (a WebSocket upgrade's, which Fastify does not parse). */
export function runOfUrl(url: string): string | undefined {
  const q = url.indexOf('?');
  if (q < 0) return undefined;
  const all = new URLSearchParams(url.slice(q + 1)).getAll(RUN_PARAM);
  return parseRunLabel(all.length === 0 ? undefined : all.length === 1 ? all[0] : all, `query parameter ${RUN_PARAM}`);
}
