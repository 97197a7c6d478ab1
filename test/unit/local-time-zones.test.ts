import { describe, expect, it } from 'vitest';
import { RoaringBitmap32 } from '../../server/crowd/bitmap';
import { dueZoneGroups, zonesPresent } from '../../server/engine/local-time';
import type { TimerStep } from '../../core/model/workflow';
import { MAX_DISTINCT_STRINGS } from '../../server/profiles/index-field';
import { ProfileIndex, type ProfileChange } from '../../server/profiles/index-tenant';

const morning: TimerStep = { name: 'morning', kind: 'timer', cron: '0 0 9 * * *', tzFromProfile: 'timezone', tz: 'Asia/Tokyo', next: 'done' };
// 09:00 in Tokyo (00:00 UTC) on 2026-06-01: due is the firing, now a moment after it.
const due = Date.parse('2026-06-01T00:00:00Z');

function indexOf(values: (user: number) => string, users: number): ProfileIndex {
  const index = new ProfileIndex();
  const changes: ProfileChange[] = [];
  for (let user = 0; user < users; user++) changes.push({ user, after: { timezone: values(user) } });
  index.apply(changes);
  return index;
}

describe('local-time timers: which zones an attribute offers', () => {
  it('offers each valid zone of the attribute and the default zone', () => {
    const index = indexOf((user) => (user % 2 === 0 ? 'Europe/Amsterdam' : 'Mars/Olympus'), 10);
    expect(zonesPresent(index, morning).sort()).toEqual(['Asia/Tokyo', 'Europe/Amsterdam']);
  });

  it('an attribute with more distinct strings than the index keeps bitmaps for offers no zones: everyone fires in the default zone', () => {
    const users = MAX_DISTINCT_STRINGS + 10;
    // One user holds a real zone; the rest hold e-mail-like strings, so the attribute is high-cardinality.
    const index = indexOf((user) => (user === 0 ? 'Europe/Amsterdam' : `user${user}@example.com`), users);
    expect(zonesPresent(index, morning)).toEqual(['Asia/Tokyo']);
    const everyone = new RoaringBitmap32();
    everyone.addRange(0, users);
    const groups = dueZoneGroups(index, morning, everyone, due, due + 1);
    expect(groups).toHaveLength(1);
    expect(groups[0]?.size).toBe(users);
  });
});
