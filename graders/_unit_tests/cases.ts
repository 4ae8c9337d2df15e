// The hidden test file of a task, `<hidden>/cases.json`: what the runner executes, checked on the
// host before anything runs so a broken task fails loudly instead of scoring every rollout 0.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z, errors } from 'rft-endpoints';

const caseSchema = z
  .object({
    name: z.string().min(1).max(200),
    code: z.string().optional(),
    expr: z.string().optional(),
    expect: z.unknown().optional(),
    raises: z.string().min(1).optional(),
    tol: z.number().nonnegative().optional(),
  })
  .refine((c) => (c.raises !== undefined) !== (c.expr !== undefined && 'expect' in c), {
    message: 'each case needs either "expr" with "expect", or "raises"',
  });

export const casesSchema = z.object({
  /** The language of the agent's code and of setup/code/expr. */
  language: z.enum(['python', 'node']).default('python'),
  setup: z.string().default(''),
  sys_path: z.array(z.string()).default(['.']),
  timeout_s: z.number().positive().max(120).default(10),
  /** How many cases run at once (each in its own process); 1 for cases that share files. */
  parallel: z.number().int().min(1).max(16).default(4),
  cases: z.array(caseSchema).min(1),
});
export type CasesFile = z.infer<typeof casesSchema>;

export async function readCases(hiddenDir: string): Promise<CasesFile> {
  const file = join(hiddenDir, 'cases.json');
  let raw: unknown;
  try {
    raw = JSON.parse(await readFile(file, 'utf8'));
  } catch (e) {
    // Named as the row names it: the host path stays in the server's log.
    throw errors.graderConfig('item.sandbox.hidden', `cannot read cases.json: ${(e as { code?: string }).code ?? (e instanceof SyntaxError ? 'not JSON' : 'unreadable')}`);
  }
  const parsed = casesSchema.safeParse(raw);
  if (!parsed.success) throw errors.graderConfig('item.sandbox.hidden', `cases.json: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  const names = new Set<string>();
  for (const c of parsed.data.cases) {
    if (names.has(c.name)) throw errors.graderConfig('item.sandbox.hidden', `cases.json: case "${c.name}" appears twice`);
    names.add(c.name);
  }
  return parsed.data;
}
