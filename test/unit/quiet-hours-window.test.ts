// Quiet hours (issue 37 §3) without a database: the window math in each user's zone (midnight, daylight saving, odd
// offsets), the rule's checks in validateWorkflow(), and grouping a move's users by the zones inside the window.
import { describe, expect, it } from 'vitest';
import { RoaringBitmap32 } from '../../server/crowd/bitmap';
import { usersByZone, zonesIn } from '../../server/profiles/zones';
import { isQuietAt, quietEndsAt, quietHoursProblems } from '../../core/model/quiet-hours';
import { validateWorkflow } from '../../core/model/validate';
import { ProfileIndex } from '../../server/profiles/index-tenant';

const night = { start: '21:00', end: '08:00' };
const at = (iso: string) => Date.parse(iso);
const iso = (ms: number) => new Date(ms).toISOString();

describe('quiet hours: the window in a zone', () => {
  it('spans midnight: 21:00 to 08:00 is quiet late in the evening and early in the morning, not at 08:00 or during the day', () => {
    // Amsterdam is UTC+2 in June.
    expect(isQuietAt(night, at('2026-06-01T18:59:00Z'), 'Europe/Amsterdam')).toBe(false);
    expect(isQuietAt(night, at('2026-06-01T19:00:00Z'), 'Europe/Amsterdam')).toBe(true);
    expect(isQuietAt(night, at('2026-06-01T23:30:00Z'), 'Europe/Amsterdam')).toBe(true);
    expect(isQuietAt(night, at('2026-06-02T05:59:59Z'), 'Europe/Amsterdam')).toBe(true);
    expect(isQuietAt(night, at('2026-06-02T06:00:00Z'), 'Europe/Amsterdam')).toBe(false);
    // A window inside one day.
    expect(isQuietAt({ start: '12:00', end: '14:00' }, at('2026-06-01T12:30:00Z'), 'UTC')).toBe(true);
    expect(isQuietAt({ start: '12:00', end: '14:00' }, at('2026-06-01T23:30:00Z'), 'UTC')).toBe(false);
  });

  it('opens at the end time in the user’s own zone, the same instant differing per zone', () => {
    const moment = at('2026-06-01T22:00:00Z');
    expect(iso(quietEndsAt(night, moment, 'Europe/Amsterdam'))).toBe('2026-06-02T06:00:00.000Z');
    expect(iso(quietEndsAt(night, moment, 'UTC'))).toBe('2026-06-02T08:00:00.000Z');
    // 18:00 in New York: not quiet, so deliveries go at once.
    expect(quietEndsAt(night, moment, 'America/New_York')).toBe(moment);
    // UTC+05:45: 22:00 UTC is 03:45 in Kathmandu, the window opens at 08:00 there, 02:15 UTC.
    expect(iso(quietEndsAt(night, moment, 'Asia/Kathmandu'))).toBe('2026-06-02T02:15:00.000Z');
  });

  it('a night whose clocks spring forward is an hour shorter; one whose clocks fall back an hour longer', () => {
    // New York, 2026-03-08 02:00 EST → 03:00 EDT. 21:00 EST on the 7th is 02:00 UTC; 08:00 EDT is 12:00 UTC (not 13:00).
    expect(iso(quietEndsAt(night, at('2026-03-08T02:00:00Z'), 'America/New_York'))).toBe('2026-03-08T12:00:00.000Z');
    // 2026-11-01 02:00 EDT → 01:00 EST. 21:00 EDT on Oct 31 is 01:00 UTC; 08:00 EST is 13:00 UTC.
    expect(iso(quietEndsAt(night, at('2026-11-01T01:00:00Z'), 'America/New_York'))).toBe('2026-11-01T13:00:00.000Z');
  });

  it('an end time the clocks skip opens the window when they jump past it; an end time they repeat, at its first occurrence', () => {
    // 02:30 does not exist in New York on 2026-03-08: the window 01:00–02:30 opens at 03:00 EDT (07:00 UTC).
    const skipped = { start: '01:00', end: '02:30' };
    expect(iso(quietEndsAt(skipped, at('2026-03-08T06:10:00Z'), 'America/New_York'))).toBe('2026-03-08T07:00:00.000Z');
    // 01:30 happens twice on 2026-11-01: the window 00:00–01:30 opens at the first, 01:30 EDT (05:30 UTC).
    const repeated = { start: '00:00', end: '01:30' };
    expect(iso(quietEndsAt(repeated, at('2026-11-01T04:10:00Z'), 'America/New_York'))).toBe('2026-11-01T05:30:00.000Z');
  });

  it('refuses a malformed time, equal start and end, and an unknown zone, naming the field', () => {
    expect(quietHoursProblems({ start: '21:00', end: '08:00', defaultZone: 'Europe/Paris' })).toEqual([]);
    expect(quietHoursProblems({ start: '9pm', end: '24:00' }).map((p) => p.field)).toEqual(['start', 'end']);
    expect(quietHoursProblems({ start: '21:00', end: '21:00' })).toEqual([{ field: 'end', message: expect.stringContaining('two different times') }]);
    expect(quietHoursProblems({ start: '21:00', end: '08:00', defaultZone: 'Mars/Olympus' })).toEqual([
      { field: 'defaultZone', message: expect.stringContaining('not an IANA time zone') },
    ]);
  });
});

describe('quiet hours in a workflow definition (validateWorkflow)', () => {
  const steps = [{ name: 'welcome', kind: 'direct' as const, enterAction: 'webhook:crm' }];

  it('accepts none (false), the tenant’s (absent) and a rule of its own, with defaults filled in', () => {
    expect(validateWorkflow({ steps, quietHours: false }).ok).toBe(true);
    expect(validateWorkflow({ steps }).ok).toBe(true);
    const own = validateWorkflow({ steps, quietHours: { start: '22:00', end: '07:30', mode: 'drop' } });
    expect(own.ok && own.definition.quietHours).toEqual({ start: '22:00', end: '07:30', mode: 'drop', zoneAttribute: 'timezone', defaultZone: 'UTC' });
  });

  it('names each problem of the override once, as bad_quiet_hours', () => {
    const result = validateWorkflow({ steps, quietHours: { start: '25:00', end: '08:00', defaultZone: 'Nowhere/City', mode: 'later' } });
    expect(result.ok).toBe(false);
    const problems = result.ok ? [] : result.problems;
    expect(problems.every((p) => p.code === 'bad_quiet_hours' && p.step === null)).toBe(true);
    expect(problems.map((p) => p.message)).toEqual([
      expect.stringMatching(/^Workflow quietHours\.mode: /),
      expect.stringMatching(/^Workflow quietHours\.start: "25:00" is not a time/),
      expect.stringMatching(/^Workflow quietHours\.defaultZone: "Nowhere\/City" is not an IANA time zone/),
    ]);
    const equal = validateWorkflow({ steps, quietHours: { start: '08:00', end: '08:00' } });
    expect(equal.ok ? [] : equal.problems.map((p) => p.message)).toEqual([expect.stringContaining('quietHours.end: start and end are both 08:00')]);
    const wrongType = validateWorkflow({ steps, quietHours: true });
    expect(wrongType.ok ? [] : wrongType.problems.map((p) => p.code)).toEqual(['bad_quiet_hours']);
  });
});

describe('quiet hours: a move’s users grouped by zone', () => {
  it('one bitmap per zone inside the window, users without a valid zone in the default zone, other zones left out', () => {
    const index = new ProfileIndex();
    const zoneOf = (user: number) => ['Europe/Amsterdam', 'America/New_York', 'Asia/Tokyo', 'Mars/Olympus'][user % 4];
    index.apply(Array.from({ length: 40 }, (_, user) => ({ user, after: user >= 36 ? { plan: 'pro' } : { timezone: zoneOf(user) } })));
    expect(zonesIn(index, 'timezone', 'UTC').sort()).toEqual(['America/New_York', 'Asia/Tokyo', 'Europe/Amsterdam', 'UTC']);
    // 22:00 UTC: 00:00 in Amsterdam, 07:00 in Tokyo and 22:00 in UTC are quiet; 18:00 in New York is not.
    const moment = at('2026-06-01T22:00:00Z');
    const quiet = new Set(zonesIn(index, 'timezone', 'UTC').filter((zone) => isQuietAt(night, moment, zone)));
    expect([...quiet].sort()).toEqual(['Asia/Tokyo', 'Europe/Amsterdam', 'UTC']);
    const move = new RoaringBitmap32();
    move.addRange(0, 40);
    const groups = usersByZone(index, 'timezone', 'UTC', move, (zone) => quiet.has(zone));
    expect([...groups.keys()].sort()).toEqual(['Asia/Tokyo', 'Europe/Amsterdam', 'UTC']);
    expect(groups.get('Europe/Amsterdam')?.toArray()).toEqual([0, 4, 8, 12, 16, 20, 24, 28, 32]);
    expect(groups.get('Asia/Tokyo')?.toArray()).toEqual([2, 6, 10, 14, 18, 22, 26, 30, 34]);
    // An unknown zone (Mars/Olympus: 3, 7, …) and no zone at all (36–39) fall back to the default zone.
    expect(groups.get('UTC')?.toArray()).toEqual([3, 7, 11, 15, 19, 23, 27, 31, 35, 36, 37, 38, 39]);
  });
});
