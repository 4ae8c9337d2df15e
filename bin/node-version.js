// The Node.js versions rft-endpoints runs on (package.json "engines"). An older Node gets one line on
// stderr, not a refusal: CI still runs the unit and route tests on the machine's Node 20.
export const MIN_NODE_MAJOR = 22;

/** The warning for `version` (process.version, "v20.20.2"), or undefined when it is supported. */
export function unsupportedNode(version) {
  const major = Number(/^v?(\d+)\./.exec(version)?.[1]);
  if (!Number.isFinite(major) || major >= MIN_NODE_MAJOR) return undefined;
  return `warning: rft-endpoints needs Node.js ${MIN_NODE_MAJOR} or later and this is ${version}, which is not supported (fastify's dependencies need ${MIN_NODE_MAJOR}): some commands may fail; install Node.js 22 or 24`;
}
