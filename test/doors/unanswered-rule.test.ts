// The one rule every door ends an unanswered episode by (DoorCore.gradesUnanswered, docs/door-failures.md):
// graded with the empty answer when its client ended it or it sat idle, unless it was answered, broken by a
// failure of ours, ended by our shutdown, or last used before this process began serving (our restart or
// crash lies between). The doors' own tests play each case on their wires (test/doors/ors/session-end.test.ts,
// test/doors/openenv/episode-end.test.ts); here, the rule's whole table.
import { describe, expect, it } from 'vitest';
import { DoorCore, type CoreServices, type EpisodeAtEnd, type UnansweredEnd } from '../../src/doors/core.js';

describe('the rule for an episode that ends without an answer', () => {
  // the rule reads no service: the process's start is the core's own
  const before = Date.now() - 1;
  const core = new DoorCore({} as CoreServices);
  const after = Date.now() + 1;
  const open: EpisodeAtEnd = { answered: false, broken: false };

  it('grades what its client or its idleness ended, used while this process served', () => {
    for (const by of ['client', 'idle'] as const) expect(core.gradesUnanswered({ by, lastUsed: after }, open), by).toBe(true);
  });

  it('never grades an answered or broken episode, our shutdown\'s, or one last used before this process served', () => {
    const cases: [UnansweredEnd, EpisodeAtEnd][] = [
      [{ by: 'client', lastUsed: after }, { answered: true, broken: false }],
      [{ by: 'idle', lastUsed: after }, { answered: true, broken: false }],
      [{ by: 'client', lastUsed: after }, { answered: false, broken: true }],
      [{ by: 'idle', lastUsed: after }, { answered: false, broken: true }],
      [{ by: 'ours' }, open],
      [{ by: 'client', lastUsed: before }, open],
      [{ by: 'idle', lastUsed: before }, open],
    ];
    for (const [end, ep] of cases) expect(core.gradesUnanswered(end, ep), JSON.stringify([end, ep])).toBe(false);
  });
});
