import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { lstatSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { overlayFiles } from '../../graders/_unit_tests/overlay.js';

describe('pristine file overlay', () => {
  let base: string;
  let src: string;
  let ws: string;
  let outside: string;
  beforeEach(() => {
    base = mkdtempSync(join(tmpdir(), 'rft-overlay-'));
    src = join(base, 'files');
    ws = join(base, 'ws');
    outside = join(base, 'outside');
    for (const d of [join(src, 'data/deep'), ws, outside]) mkdirSync(d, { recursive: true });
    writeFileSync(join(src, 'data/prices.csv'), 'pristine\n');
    writeFileSync(join(src, 'data/deep/x.txt'), 'x\n');
    writeFileSync(join(outside, 'prices.csv'), 'outside\n');
  });
  afterEach(() => rmSync(base, { recursive: true, force: true }));

  it('replaces a file the agent edited', async () => {
    mkdirSync(join(ws, 'data'));
    writeFileSync(join(ws, 'data/prices.csv'), 'edited\n');
    expect(await overlayFiles(src, ws)).toEqual(['data/deep/x.txt', 'data/prices.csv']);
    expect(readFileSync(join(ws, 'data/prices.csv'), 'utf8')).toBe('pristine\n');
  });

  it('replaces a symlinked directory instead of writing through it', async () => {
    symlinkSync(outside, join(ws, 'data'));
    await overlayFiles(src, ws);
    expect(lstatSync(join(ws, 'data')).isDirectory()).toBe(true);
    expect(readFileSync(join(outside, 'prices.csv'), 'utf8')).toBe('outside\n');
    expect(existsSync(join(outside, 'deep'))).toBe(false);
  });

  it('replaces a symlink, even a dangling one, at a file path', async () => {
    mkdirSync(join(ws, 'data'));
    symlinkSync(join(outside, 'prices.csv'), join(ws, 'data/prices.csv'));
    symlinkSync(join(outside, 'nope.txt'), join(ws, 'data/deep'));
    await overlayFiles(src, ws);
    expect(lstatSync(join(ws, 'data/prices.csv')).isFile()).toBe(true);
    expect(readFileSync(join(outside, 'prices.csv'), 'utf8')).toBe('outside\n');
    expect(existsSync(join(outside, 'nope.txt'))).toBe(false);
  });

  it('replaces a file where the task has a directory', async () => {
    mkdirSync(join(ws, 'data'));
    writeFileSync(join(ws, 'data/deep'), 'not a dir');
    await overlayFiles(src, ws);
    expect(readFileSync(join(ws, 'data/deep/x.txt'), 'utf8')).toBe('x\n');
  });

  it('does nothing when the task has no pristine files', async () => {
    expect(await overlayFiles(join(base, 'missing'), ws)).toEqual([]);
  });
});
