// Module resolution hook (node:module register) that adds the `rft-source` export condition, as
// `node --conditions=rft-source` would: bin/rft-endpoints.js uses it when running from a checkout.
export async function resolve(specifier, context, next) {
  if (context.conditions.includes('rft-source')) return next(specifier, context);
  return next(specifier, { ...context, conditions: [...context.conditions, 'rft-source'] });
}
