// Which changes to a task container's files the verify step refuses to read a reward after
// (verifierToolChanges, src/harbor/verify.ts): its own programs and what they load, not a task's work.
import { describe, expect, it } from 'vitest';
import { verifierToolChanges } from '../../src/harbor/verify.js';
import type { FsChange } from '../../src/sandbox/types.js';

const flagged = (path: string, kind: FsChange['kind'] = 'changed'): boolean => verifierToolChanges([{ path, kind }]).length > 0;

describe('verifierToolChanges', () => {
  it.each([
    ['/usr/bin/bash', 'changed'],
    ['/usr/bin/bash', 'deleted'],
    ['/bin/sh', 'added'], // a /bin made a directory over the usrmerge link
    ['/usr/local/bin/bash', 'added'], // first on the PATH
    ['/opt/conda/bin/sh', 'added'],
    ['/usr/bin/head', 'changed'],
    ['/usr/bin/tar', 'changed'],
    ['/usr/sbin/chown', 'added'],
    ['/bin/busybox', 'changed'],
    ['/usr/lib/x86_64-linux-gnu/libc.so.6', 'changed'],
    ['/usr/local/lib/libc.so.6', 'added'], // found first once the loader's cache points at it
    ['/lib64/ld-linux-x86-64.so.2', 'changed'],
    ['/lib/ld-musl-x86_64.so.1', 'changed'],
    ['/usr/lib/x86_64-linux-gnu/libtinfo.so.6', 'changed'],
    ['/usr/lib/x86_64-linux-gnu/libselinux.so.1', 'deleted'],
    ['/etc/ld.so.preload', 'added'],
  ] as const)('%s (%s) is the verify step\'s', (path, kind) => {
    expect(flagged(path, kind)).toBe(true);
  });

  it.each([
    '/usr/bin', // a directory whose entries changed
    '/usr/local/bin/greet',
    '/usr/local/bin/pytest',
    '/app/bash', // not a bin directory
    '/app/bin.sh',
    '/usr/share/bash-completion/completions/bash', // not a bin directory
    '/usr/local/lib/libgreet.so.1',
    '/usr/lib/python3/dist-packages/numpy/core/_multiarray_umath.cpython-311-x86_64-linux-gnu.so',
    '/etc/ld.so.cache', // apt's trigger rewrites it with every library a task installs
    '/etc/ld.so.conf.d/local.conf',
    '/etc/bash.bashrc',
  ])('%s is not', (path) => {
    expect(flagged(path, 'changed')).toBe(false);
    expect(flagged(path, 'added')).toBe(false);
  });

  it('lists each as its kind and path', () => {
    const list = verifierToolChanges([
      { path: '/usr', kind: 'changed' },
      { path: '/usr/bin', kind: 'changed' },
      { path: '/usr/bin/head', kind: 'changed' },
      { path: '/app/out.txt', kind: 'added' },
      { path: '/usr/local/bin/sh', kind: 'added' },
    ]);
    expect(list).toEqual(['changed /usr/bin/head', 'added /usr/local/bin/sh']);
  });
});
