// Task images (SandboxSpec.image: a Harbor task's environment) on each engine: a prebuilt image is
// looked up (never pulled: the engine may not reach a registry, and a rollout never downloads), a
// Dockerfile folder is built once per content digest and engine, through the Engine API with the
// folder as the tar context (no network in its RUN steps), single-flight: a step of many rollouts of
// one task builds once, the others wait for that build. The tag is rft-harbor-env:<digest prefix>,
// so a restarted server finds what it built before. A missing image, a failed build or one past its
// build_timeout_sec is a coded 5xx error (ours: the model did nothing; see errors.ts).
import { Readable } from 'node:stream';
import { errors } from '../../../errors.js';
import type { DockerEngine } from './engine.js';
import { packWorkspace } from './tar.js';
import type { SandboxImage } from '../../types.js';

export const TASK_IMAGE_REPO = 'rft-harbor-env';
/** Label of every image built here: the digest of the folder it was built from. */
export const TASK_DIGEST_LABEL = 'rft-endpoints.harbor-digest';

/** The tag a task's built image gets. */
export function builtTag(digest: string): string {
  return `${TASK_IMAGE_REPO}:${digest.replace(/^sha256:/, '').slice(0, 16)}`;
}

/** The tag a spec's image runs as: its ref, or its build's tag. */
export function imageTag(img: SandboxImage): string {
  if (img.ref !== undefined) return img.ref;
  if (img.build === undefined) throw errors.sandboxFailed('a task image names neither a prebuilt image nor a build folder');
  return builtTag(img.build.digest);
}

/** What the container is made from: the tag, and the image's own WORKDIR and USER. */
export interface ImageFacts {
  tag: string;
  workdir: string;
  user: string;
}

export class TaskImages {
  private readonly ready = new Map<string, Promise<ImageFacts>>();
  /** Builds started by this process (the benchmark's count: one per image and engine). */
  builds = 0;

  constructor(private readonly labels: Record<string, string> = {}) {}

  /** The image on `engine`, built if it must be; concurrent callers share one lookup and build. */
  ensure(engine: DockerEngine, img: SandboxImage): Promise<ImageFacts> {
    const tag = imageTag(img);
    const key = `${engine.name}\0${tag}`;
    let p = this.ready.get(key);
    if (!p) {
      p = this.resolve(engine, img, tag);
      this.ready.set(key, p);
      // A failure is not remembered: the next rollout tries again (the engine may have been busy).
      p.catch(() => this.ready.delete(key));
    }
    return p;
  }

  /** Forgets what was found of `img` on `engine` (the engine no longer has it): the next ensure() looks again. */
  forget(engine: DockerEngine, img: SandboxImage): void {
    this.ready.delete(`${engine.name}\0${imageTag(img)}`);
  }

  private async resolve(engine: DockerEngine, img: SandboxImage, tag: string): Promise<ImageFacts> {
    const found = await this.inspect(engine, tag);
    if (found) return found;
    if (!img.build) throw errors.harborImageMissing(tag, engine.name);
    await this.build(engine, img.build, tag);
    const built = await this.inspect(engine, tag);
    if (!built) throw errors.harborImageBuild(tag, `engine "${engine.name}" reported no image after the build`);
    return built;
  }

  private async inspect(engine: DockerEngine, tag: string): Promise<ImageFacts | null> {
    const res = await engine.use((api) =>
      api.call<{ Config?: { WorkingDir?: string; User?: string } }>('GET', `/images/${encodeURIComponent(tag)}/json`, undefined, { ok: [404] }),
    );
    if (res.status === 404) return null;
    return { tag, workdir: res.body.Config?.WorkingDir || '/', user: res.body.Config?.User || '0' };
  }

  private async build(engine: DockerEngine, b: NonNullable<SandboxImage['build']>, tag: string): Promise<void> {
    const packed = await packWorkspace({ templateDir: b.contextDir });
    if (!packed) throw errors.harborImageBuild(tag, 'the environment folder is empty');
    const context = Buffer.concat(await packed.stream({ uid: 0, gid: 0 }).toArray());
    const labels = encodeURIComponent(JSON.stringify({ ...this.labels, [TASK_DIGEST_LABEL]: b.digest }));
    // networkmode=none: RUN steps reach nothing; no pull: a FROM the engine lacks fails the build.
    const query = `t=${encodeURIComponent(tag)}&rm=1&forcerm=1&networkmode=none&labels=${labels}`;
    this.builds++;
    let timer: NodeJS.Timeout | undefined;
    // Past build_timeout_sec the request is aborted: the engine cancels the build (its step's container
    // is stopped and removed: forcerm), so a slow build does not go on using the engine for nothing.
    const abort = new AbortController();
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        abort.abort();
        reject(errors.harborImageBuildTimeout(tag, Math.round(b.timeoutMs / 1000)));
      }, b.timeoutMs);
    });
    try {
      const res = await Promise.race([
        engine.use((api) =>
          api.call<unknown>('POST', `/build?${query}`, undefined, {
            raw: { body: Readable.from(context), contentType: 'application/x-tar' },
            timeoutMs: b.timeoutMs + 5_000,
            ok: [400, 500],
            signal: abort.signal,
          }),
        ),
        timeout,
      ]);
      const text = typeof res.body === 'string' ? res.body : JSON.stringify(res.body ?? '');
      if (res.status >= 400) throw errors.harborImageBuild(tag, text.slice(0, 500));
      // The build's progress is a stream of JSON objects; a failed step is one with `error`.
      for (const line of text.split(/\r?\n/)) {
        if (!line.trim()) continue;
        let msg: { error?: string; errorDetail?: { message?: string } };
        try {
          msg = JSON.parse(line) as typeof msg;
        } catch {
          continue;
        }
        if (msg.error) throw errors.harborImageBuild(tag, (msg.errorDetail?.message ?? msg.error).slice(0, 500));
      }
    } finally {
      clearTimeout(timer);
    }
  }
}
