// The headers in which a static key is accepted (RFT_API_KEY_HEADERS): `Authorization` takes
// `Bearer <key>`, any other header the bare key (Azure Functions' `x-functions-key`, API
// Management's `api-key`). Hosted trainers forward the job's `headers` verbatim, so the server
// reads the key where the job puts it.

export interface KeyHeader {
  /** Lower-case, as Node presents request headers. */
  name: string;
  /** As configured, for the snippets printed to users. */
  display: string;
  scheme: 'bearer' | 'bare';
}

export function keyHeaders(names: readonly string[]): KeyHeader[] {
  return names.map((display) => {
    const name = display.toLowerCase();
    return { name, display, scheme: name === 'authorization' ? 'bearer' : 'bare' };
  });
}

const BEARER = /^Bearer[ \t]+(\S+)[ \t]*$/i;
const BARE = /^[ \t]*(\S+)[ \t]*$/;

/** The key carried by a header value, or undefined when the value is not of the header's form. */
export function keyFromHeader(h: KeyHeader, value: string): string | undefined {
  return (h.scheme === 'bearer' ? BEARER : BARE).exec(value)?.[1];
}

/** What a job's `headers` must hold for this header. */
export function headerSnippet(h: KeyHeader, key: string): Record<string, string> {
  return { [h.display === 'authorization' ? 'Authorization' : h.display]: h.scheme === 'bearer' ? `Bearer ${key}` : key };
}

/** How a caller should send a key, for error messages: `Authorization: Bearer <key>` or `x-functions-key: <key>`. */
export function describeKeyHeaders(headers: readonly KeyHeader[]): string {
  return headers.map((h) => Object.entries(headerSnippet(h, '<key>')).map(([k, v]) => `"${k}: ${v}"`)[0]).join(' or ');
}
