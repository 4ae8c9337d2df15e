// The Harbor task loader (src/harbor/task.ts): task.toml normalised as Harbor's models do, Harbor's
// validity rule with coded reasons, canary stripping, the digests. No Docker.
import { cpSync, mkdtempSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { environmentDigest, parseTaskToml, readHarborTask, sizeToMb, stripCanary, taskDigest } from '../../src/harbor/task.js';

const EXAMPLES = join(import.meta.dirname, '../../examples/harbor');
const INVALID = join(import.meta.dirname, '../fixtures/harbor-invalid');

const tmp: string[] = [];
afterEach(() => {
  for (const d of tmp.splice(0)) rmSync(d, { recursive: true, force: true });
});
function copyOf(src: string): string {
  const d = mkdtempSync(join(tmpdir(), 'harbor-task-'));
  tmp.push(d);
  cpSync(src, d, { recursive: true });
  return d;
}

describe('task.toml', () => {
  it('reads the current schema with Harbor defaults for what it leaves out', () => {
    const { config } = parseTaskToml('schema_version = "1.4"\n[task]\nname = "org/t"\n[agent]\ntimeout_sec = 120\n');
    expect(config).toMatchObject({
      schemaVersion: '1.4',
      packageName: 'org/t',
      agent: { timeoutSec: 120 },
      verifier: { timeoutSec: 600, env: {}, mode: 'shared' },
      environment: { buildTimeoutSec: 600, env: {}, networkMode: 'public' },
      solution: { env: {} },
    });
    expect(config.environment.cpus).toBeUndefined();
  });

  it('maps the legacy schema: root version, memory/storage strings, allow_internet, no [task]', () => {
    const { config } = parseTaskToml('version = "1.0"\n[metadata]\nx = 1\n[environment]\nmemory = "2G"\nstorage = "512M"\nallow_internet = false\n');
    expect(config.schemaVersion).toBe('1.0');
    expect(config.packageName).toBeUndefined();
    expect(config.environment).toMatchObject({ memoryMb: 2048, storageMb: 512, networkMode: 'no-network' });
    expect(config.metadata).toEqual({ x: 1 });
  });

  it('lets network_mode win over allow_internet and ignores unknown keys anywhere', () => {
    const { config } = parseTaskToml('wat = 1\n[environment]\nallow_internet = false\nnetwork_mode = "public"\nmystery = "x"\n[unknown]\na = 1\n');
    expect(config.environment.networkMode).toBe('public');
  });

  it('coerces numbers as pydantic does, and refuses what pydantic refuses', () => {
    expect(parseTaskToml('[environment]\ncpus = "2"\n').config.environment.cpus).toBe(2);
    expect(() => parseTaskToml('[environment]\ncpus = 1.5\n')).toThrow(/integer/);
    expect(() => parseTaskToml('[environment]\nnetwork_mode = "everything"\n')).toThrow();
    expect(() => parseTaskToml('[environment]\nmemory = "2G"\nmemory_mb = 1\n')).toThrow(/conflicting/);
    expect(() => parseTaskToml('[task]\ndescription = "no name"\n')).toThrow(/name/);
    expect(() => parseTaskToml('[task]\nname = "noslash"\n')).toThrow(/org\/name/);
    expect(() => parseTaskToml('[verifier]\nenvironment_mode = "shared"\n[verifier.environment]\ncpus = 1\n')).toThrow(/incompatible/);
  });

  it('takes separate verifier mode from [verifier.environment]', () => {
    const { config } = parseTaskToml('[verifier.environment]\ndocker_image = "v:1"\n');
    expect(config.verifier.mode).toBe('separate');
    expect(config.verifier.environment?.dockerImage).toBe('v:1');
  });

  it('reads root artifacts as their sources, and refuses ".." in them as Harbor does', () => {
    expect(parseTaskToml('artifacts = ["/app/out", { source = "/logs/x.txt", destination = "x" }]\n').config.artifacts).toEqual(['/app/out', '/logs/x.txt']);
    expect(parseTaskToml('schema_version = "1.4"\n').config.artifacts).toBeUndefined();
    expect(() => parseTaskToml('artifacts = ["/app/../etc"]\n')).toThrow(/\.\./);
  });

  it("reads the shape of Terminal-Bench's converted tasks (schema 1.0, empty env tables, gpus = 0, mcp_servers = [])", () => {
    const text = [
      'version = "1.0"',
      '[metadata]\nauthor_name = "x"\ndifficulty = "medium"\ntags = [ "coding", "automation",]\nexpert_time_estimate_min = 30.0',
      '[verifier]\ntimeout_sec = 240.0',
      '[agent]\ntimeout_sec = 900.0',
      '[environment]\nbuild_timeout_sec = 600.0\ncpus = 1\nmemory_mb = 2048\nstorage_mb = 10240\ngpus = 0\nallow_internet = true\nmcp_servers = []',
      '[verifier.env]',
      '[solution.env]',
    ].join('\n');
    const parsed = parseTaskToml(text);
    expect(parsed.gpus).toBe(0);
    expect(parsed.config).toMatchObject({ schemaVersion: '1.0', agent: { timeoutSec: 900 }, verifier: { timeoutSec: 240, env: {}, mode: 'shared' } });
    expect(parsed.config.environment).toMatchObject({ cpus: 1, memoryMb: 2048, storageMb: 10240, networkMode: 'public' });
  });

  it('converts sizes as Harbor does', () => {
    expect(sizeToMb('2G')).toBe(2048);
    expect(sizeToMb(' 1.5g ')).toBe(1536);
    expect(sizeToMb('1024K')).toBe(1);
    expect(() => sizeToMb('2GB')).toThrow();
    expect(() => sizeToMb('12')).toThrow();
  });
});

describe('canary lines', () => {
  it('strips leading HTML and hash canary lines and the blank lines after them, nothing else', () => {
    const text = '<!-- harbor-canary GUID 1 -->\n# terminal-bench-canary GUID 2\n\n\nDo it.\n# a canary later stays\n';
    expect(stripCanary(text)).toBe('Do it.\n# a canary later stays\n');
    expect(stripCanary('# Title\n\nbody')).toBe('# Title\n\nbody');
  });

  it('gives the example its instruction without them', () => {
    const r = readHarborTask(join(EXAMPLES, 'canary-env'));
    if (!('task' in r)) throw new Error(r.invalid.reason);
    expect(r.task.instruction.startsWith('Write the word')).toBe(true);
    expect(r.task.instruction).not.toMatch(/canary/i);
  });
});

describe('validity', () => {
  it.each([
    ['no-tests', 'RFT_ERR_HARBOR_TASK_FILES', /tests\/test\.sh/],
    ['no-image', 'RFT_ERR_HARBOR_TASK_FILES', /Dockerfile/],
    ['bad-toml', 'RFT_ERR_HARBOR_TASK_TOML', /not TOML/],
    ['compose-sidecar', 'RFT_ERR_HARBOR_TASK_COMPOSE', /"db"/],
    ['multi-step', 'RFT_ERR_HARBOR_TASK_MULTI_STEP', /2 of them/],
  ])('%s is refused with %s', (name, code, why) => {
    const r = readHarborTask(join(INVALID, name));
    expect('invalid' in r && r.invalid).toMatchObject({ code, reason: expect.stringMatching(why) });
  });

  it('runs a compose file whose one service is main, and takes its image for docker_image', () => {
    const d = copyOf(join(INVALID, 'no-image'));
    writeFileSync(join(d, 'environment', 'docker-compose.yaml'), 'services:\n  main:\n    image: base:1\n    environment:\n      A: b\n');
    const r = readHarborTask(d);
    expect('task' in r && r.task.config.environment.dockerImage).toBe('base:1');
  });

  it('refuses a one-service compose file whose service is not main, or builds elsewhere', () => {
    const d = copyOf(join(INVALID, 'valid'));
    writeFileSync(join(d, 'environment', 'docker-compose.yaml'), 'services:\n  client:\n    build: .\n');
    expect(readHarborTask(d)).toMatchObject({ invalid: { code: 'RFT_ERR_HARBOR_TASK_COMPOSE' } });
    writeFileSync(join(d, 'environment', 'docker-compose.yaml'), 'services:\n  main:\n    build:\n      context: ../other\n');
    expect(readHarborTask(d)).toMatchObject({ invalid: { code: 'RFT_ERR_HARBOR_TASK_COMPOSE' } });
  });

  it('refuses Windows and GPU tasks with their own code', () => {
    const d = copyOf(join(INVALID, 'valid'));
    writeFileSync(join(d, 'task.toml'), '[environment]\ndocker_image = "x"\nos = "Windows"\n');
    expect(readHarborTask(d)).toMatchObject({ invalid: { code: 'RFT_ERR_HARBOR_TASK_UNSUPPORTED' } });
    writeFileSync(join(d, 'task.toml'), '[environment]\ndocker_image = "x"\ngpus = 1\n');
    expect(readHarborTask(d)).toMatchObject({ invalid: { code: 'RFT_ERR_HARBOR_TASK_UNSUPPORTED' } });
  });

  it('needs no tests/test.sh in separate verifier mode (the verifier image holds it)', () => {
    const d = copyOf(join(INVALID, 'no-tests'));
    writeFileSync(join(d, 'task.toml'), '[environment]\ndocker_image = "x"\n[verifier]\nenvironment_mode = "separate"\n');
    expect('task' in readHarborTask(d)).toBe(true);
  });

  it('reads every example task as valid, named after its folder', () => {
    for (const name of ['write-greeting', 'count-answers', 'config-repair', 'prebuilt-image', 'legacy-schema', 'workdir-project']) {
      const r = readHarborTask(join(EXAMPLES, name));
      if (!('task' in r)) throw new Error(r.invalid.reason);
      expect(r.task.name).toBe(name);
    }
  });
});

describe('digests', () => {
  it("follow the task's files: the environment digest only environment/", () => {
    const d = copyOf(join(EXAMPLES, 'count-answers'));
    const before = { task: taskDigest(d), env: environmentDigest(d) };
    writeFileSync(join(d, 'tests', 'expected.txt'), '5\n42\n6\n4\n');
    expect(taskDigest(d)).not.toBe(before.task);
    expect(environmentDigest(d)).toBe(before.env);
    writeFileSync(join(d, 'environment', 'questions.txt'), '1 + 1\n');
    expect(environmentDigest(d)).not.toBe(before.env);
    // A file outside the digested parts changes neither.
    const now = taskDigest(d);
    mkdirSync(join(d, 'notes'));
    writeFileSync(join(d, 'notes', 'x'), 'y');
    expect(taskDigest(d)).toBe(now);
  });

  it('is the sorted path NUL sha256 LF records, so a renamed file changes it', () => {
    const d = copyOf(join(INVALID, 'valid'));
    const before = taskDigest(d);
    cpSync(join(d, 'instruction.md'), join(d, 'README.md'));
    expect(taskDigest(d)).not.toBe(before);
    expect(taskDigest(d)).toMatch(/^[0-9a-f]{64}$/);
  });
});
