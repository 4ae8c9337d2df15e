// What a Docker sandbox's workspace archive can do to the server's disk when copied out (the
// unit_tests grader): nothing outside the target directory, whatever the archive holds.
import { existsSync } from 'node:fs';
import { lstat, mkdir, mkdtemp, readFile, readlink, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pack, type Header } from 'tar-stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { extractArchive, packWorkspace } from '../../../../src/sandbox/drivers/docker/tar.js';

type Entry = Partial<Header> & { name: string; body?: string };

async function tarOf(entries: Entry[]): Promise<Readable> {
  const p = pack();
  for (const { body, ...h } of entries) {
    await new Promise<void>((resolve, reject) => p.entry({ mode: 0o644, ...h }, body ?? '', (e) => (e ? reject(e) : resolve())));
  }
  p.finalize();
  return Readable.from(p as AsyncIterable<Buffer>);
}

async function drain(r: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of r) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

describe('workspace archives of Docker sandboxes', () => {
  let base: string;
  let out: string;
  let outside: string;
  beforeEach(async () => {
    base = await mkdtemp(join(tmpdir(), 'rft-tar-'));
    out = join(base, 'out');
    outside = join(base, 'outside');
    await mkdir(out);
    await mkdir(outside);
    await writeFile(join(outside, 'secret'), 'host secret');
  });
  afterEach(() => rm(base, { recursive: true, force: true }));

  it('copies files, directories, modes and links as links', async () => {
    const report = await extractArchive(
      await tarOf([
        { name: './', type: 'directory', mode: 0o700 },
        { name: './src/', type: 'directory', mode: 0o755 },
        { name: './src/app.py', body: 'print(1)\n', mode: 0o755 },
        { name: './link', type: 'symlink', linkname: '/etc/passwd' },
        { name: './copy', type: 'link', linkname: './src/app.py' },
      ]),
      out,
    );
    expect(report).toMatchObject({ files: 2, skippedCount: 0 });
    expect(await readFile(join(out, 'src/app.py'), 'utf8')).toBe('print(1)\n');
    expect((await stat(join(out, 'src/app.py'))).mode & 0o777).toBe(0o755);
    expect(await readlink(join(out, 'link'))).toBe('/etc/passwd');
    expect(await readFile(join(out, 'copy'), 'utf8')).toBe('print(1)\n');
    expect((await stat(join(out, 'copy'))).nlink).toBe(1);
  });

  it('never writes outside the target: .. names, absolute names, through a planted link, a hard link out', async () => {
    const report = await extractArchive(
      await tarOf([
        { name: '../outside/secret', body: 'overwritten' },
        { name: '/tmp/rft-tar-absolute', body: 'x' },
        { name: 'esc', type: 'symlink', linkname: outside },
        { name: 'esc/secret', body: 'through the link' },
        { name: 'esc/new', body: 'through the link' },
        { name: 'hard', type: 'link', linkname: `${outside}/secret` },
        { name: 'hard2', type: 'link', linkname: '../outside/secret' },
        { name: 'esc', body: 'replace the link with a file' },
      ]),
      out,
    );
    expect(await readFile(join(outside, 'secret'), 'utf8')).toBe('host secret');
    expect(existsSync(join(outside, 'new'))).toBe(false);
    expect(existsSync('/tmp/rft-tar-absolute')).toBe(false);
    expect(existsSync(join(out, 'hard'))).toBe(false);
    expect((await lstat(join(out, 'esc'))).isSymbolicLink()).toBe(true);
    expect(report.skippedCount).toBe(7);
  });

  it('skips FIFOs and devices and drops set-id bits', async () => {
    const report = await extractArchive(
      await tarOf([
        { name: 'pipe', type: 'fifo' },
        { name: 'dev', type: 'character-device', devmajor: 1, devminor: 3 },
        { name: 'suid', body: '#!/bin/sh\n', mode: 0o4755 },
      ]),
      out,
    );
    expect(existsSync(join(out, 'pipe'))).toBe(false);
    expect(existsSync(join(out, 'dev'))).toBe(false);
    expect((await stat(join(out, 'suid'))).mode & 0o7777).toBe(0o755);
    expect(report.skipped.map((s) => s.split(':')[0])).toEqual(['pipe', 'dev']);
  });

  it('packs a template without its hidden folder, owned by the sandbox uid, and refuses inline files through its links', async () => {
    const tpl = join(base, 'tpl');
    await mkdir(join(tpl, 'hidden'), { recursive: true });
    await writeFile(join(tpl, 'a.txt'), 'a');
    await writeFile(join(tpl, 'hidden', 'cases.json'), '{}');
    const { symlink } = await import('node:fs/promises');
    await symlink('/etc', join(tpl, 'etc'));
    const packed = await packWorkspace({ templateDir: tpl, hiddenDir: join(tpl, 'hidden'), files: { 'notes/n.md': 'n' } });
    await extractArchive(packed!.stream({ uid: 1_500_000, gid: 1_500_000 }), out);
    expect(existsSync(join(out, 'hidden'))).toBe(false);
    expect(await readFile(join(out, 'notes/n.md'), 'utf8')).toBe('n');
    expect(await readlink(join(out, 'etc'))).toBe('/etc');
    const raw = await drain(packed!.stream({ uid: 1_500_000, gid: 1_500_000 }));
    expect(raw.toString('latin1')).toContain('uid=1500000');
    await expect(packWorkspace({ templateDir: tpl, files: { 'etc/passwd': 'x' } })).rejects.toMatchObject({ code: 'RFT_ERR_PATH_ESCAPE' });
    await expect(packWorkspace({ files: { '../x': 'x' } })).rejects.toMatchObject({ code: 'RFT_ERR_PATH_ESCAPE' });
  });
});
