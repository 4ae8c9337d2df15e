// The blank project's one tool, to replace with your own: typed arguments in, a short JSON answer
// out. A thrown error is an observation the model reads ("Error: ..."), not an HTTP failure.
import { defineTool, errors, z } from 'rft-endpoints';

const CATALOGUE: Record<string, { name: string; price_usd: number; in_stock: number }> = {
  'A-1001': { name: 'Desk lamp', price_usd: 34.5, in_stock: 12 },
  'A-1002': { name: 'Monitor arm', price_usd: 89, in_stock: 3 },
  'B-2001': { name: 'Ergonomic chair', price_usd: 249.99, in_stock: 0 },
  'B-2002': { name: 'Footrest', price_usd: 27.25, in_stock: 40 },
  'C-3001': { name: 'USB-C dock', price_usd: 129, in_stock: 7 },
  'C-3002': { name: 'Webcam', price_usd: 59.9, in_stock: 15 },
};

export default defineTool({
  name: 'lookup_price',
  // It only reads: a call of it that a server restart cut runs again on the trainer's retry.
  idempotent: true,
  description: 'Price in USD, name and stock of a product, by SKU.',
  parameters: z.object({ sku: z.string().describe('the product SKU, e.g. "A-1001"') }),
  cost: 1,
  async handler({ sku }) {
    const id = sku.trim().toUpperCase();
    const product = CATALOGUE[id];
    if (!product) throw errors.toolInput(`no product "${sku}"; SKUs look like "A-1001"`);
    return { sku: id, ...product };
  },
});
