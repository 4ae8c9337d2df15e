// A rollout's starting files: a template folder named by the dataset row (`item.sandbox.template`,
// relative to the templates root) and/or inline files (`item.sandbox.files`). `item.sandbox.hidden`
// names grading-only files, which graders read on the host and which never enter the workspace.
// `item.sandbox.harbor` ("<environment>/<task>") names a Harbor task: its image is the sandbox
// (src/harbor/sandbox-spec.ts), found through the lookup the loader registers.
import { constants } from 'node:fs';
import { chmod, cp, lchown, readdir, realpath, stat } from 'node:fs/promises';
import { join, posix, relative, resolve, sep } from 'node:path';
import { z } from 'zod';
import { errors } from '../../errors.js';
import { HostWorkspace, type Owner } from './host-fs.js';
import type { SandboxImage, SandboxItem, SandboxSpec } from '../types.js';
import { harborSandboxImage } from '../../harbor/sandbox-spec.js';
import type { HarborTaskLookup } from '../../harbor/types.js';

const sandboxItemSchema = z.object({
  template: z.string().min(1).optional(),
  files: z.record(z.string(), z.string()).optional(),
  hidden: z.string().min(1).optional(),
  harbor: z.string().min(1).optional(),
});

export interface WorkspaceSource {
  templateDir?: string;
  files?: Record<string, string>;
  hiddenDir?: string;
  /** A Harbor task's image (item.sandbox.harbor). */
  image?: SandboxImage;
}

/** How rows' Harbor tasks are found (the loader's registry) and the network a task asking for one gets. */
export interface HarborSource {
  lookup?: HarborTaskLookup | undefined;
  network?: string | undefined;
}

/** Resolves `rel` below `root`, following symlinks, and refuses anything that ends up outside it. */
async function resolveBelow(root: string, rel: string): Promise<string> {
  const realRoot = await realpath(root).catch(() => {
    throw errors.config('the sandbox templates root (RFT_SANDBOX_TEMPLATES) does not exist');
  });
  if (rel.startsWith('/') || rel.includes('\0')) throw errors.sandboxTemplate(rel, 'must be a relative path');
  let real: string;
  try {
    real = await realpath(resolve(realRoot, rel));
  } catch {
    throw errors.sandboxTemplate(rel, 'does not exist');
  }
  if (real !== realRoot && !real.startsWith(realRoot + sep)) throw errors.sandboxTemplate(rel, 'is outside the templates root');
  if (!(await stat(real)).isDirectory()) throw errors.sandboxTemplate(rel, 'is not a directory');
  return real;
}

/** Reads `item.sandbox` and resolves its folders below `templatesRoot`. */
export async function workspaceSource(item: SandboxItem | null | undefined, templatesRoot: string, harbor: HarborSource = {}): Promise<WorkspaceSource> {
  const raw = item?.['sandbox'];
  if (raw === undefined || raw === null) return {};
  const parsed = sandboxItemSchema.safeParse(raw);
  if (!parsed.success) throw errors.sandboxTemplate(String((raw as { template?: unknown }).template ?? ''), 'item.sandbox must be {template?, files?, hidden?, harbor?}');
  const s = parsed.data;
  if (s.harbor !== undefined) {
    // The row's, at any step (ROW_CODES, src/doors/core.ts): a task this server does not serve.
    const task = harbor.lookup?.(s.harbor);
    if (!task) throw errors.harborUnknownTask(s.harbor);
    return { image: harborSandboxImage(task, { network: harbor.network }), ...(s.files !== undefined ? { files: s.files } : {}) };
  }
  return {
    ...(s.template !== undefined ? { templateDir: await resolveBelow(templatesRoot, s.template) } : {}),
    ...(s.files !== undefined ? { files: s.files } : {}),
    ...(s.hidden !== undefined ? { hiddenDir: await resolveBelow(templatesRoot, s.hidden) } : {}),
  };
}

/**
 * Where the task's hidden folder would sit in the workspace (e.g. "tests/hidden"), when the row's
 * `sandbox.hidden` lies inside its `sandbox.template`: its files are left out of the workspace, and
 * a tool asked for that path refuses it (RFT_ERR_HIDDEN_PATH, an integrity flag) rather than answer
 * "not found". Lexical, from the row alone.
 */
export function hiddenWorkspacePath(item: SandboxItem | null | undefined): string | undefined {
  const parsed = sandboxItemSchema.safeParse(item?.['sandbox']);
  if (!parsed.success || parsed.data.template === undefined || parsed.data.hidden === undefined) return undefined;
  const rel = posix.relative(posix.normalize(parsed.data.template), posix.normalize(parsed.data.hidden));
  return rel === '' || rel.startsWith('..') || posix.isAbsolute(rel) ? undefined : rel;
}

/** Refuses a (normalized, workspace-relative) path at or below the task's hidden folder. */
export function assertNotHidden(path: string, item: SandboxItem | null | undefined): void {
  const hidden = hiddenWorkspacePath(item);
  if (hidden !== undefined && (path === hidden || path.startsWith(hidden + '/'))) throw errors.hiddenPath(path);
}

async function chownTree(dir: string, owner: Owner): Promise<void> {
  await lchown(dir, owner.uid, owner.gid);
  for (const d of await readdir(dir, { withFileTypes: true })) {
    const p = join(dir, d.name);
    if (d.isDirectory()) await chownTree(p, owner);
    else await lchown(p, owner.uid, owner.gid);
  }
}

function inside(child: string, parent: string): boolean {
  const r = relative(parent, child);
  return r === '' || (!r.startsWith('..') && !r.startsWith('/'));
}

/**
 * Fills an empty host workspace: the template is copied (copy-on-write clones where the filesystem
 * has them, a plain copy otherwise, never hard links, so the rollout cannot alter the template), the
 * hidden folder is skipped, then inline files are written through the escape-safe writer.
 */
export async function populateWorkspace(ws: string, spec: Pick<SandboxSpec, 'templateDir' | 'files' | 'hiddenDir'>, owner: Owner | null): Promise<void> {
  if (spec.templateDir !== undefined) {
    const hidden = spec.hiddenDir !== undefined ? await realpath(spec.hiddenDir).catch(() => spec.hiddenDir as string) : null;
    await cp(spec.templateDir, ws, {
      recursive: true,
      mode: constants.COPYFILE_FICLONE,
      verbatimSymlinks: true,
      force: true,
      filter: (src) => hidden === null || !inside(src, hidden),
    });
    if (owner) await chownTree(ws, owner);
    await chmod(ws, 0o700); // cp gave it the template's mode

  }
  if (spec.files) {
    const hw = new HostWorkspace(ws, owner);
    for (const [path, content] of Object.entries(spec.files)) await hw.writeFile(path, content);
  }
}
