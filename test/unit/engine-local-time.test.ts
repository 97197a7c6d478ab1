import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../server/clock';
import { RoaringBitmap32 } from '../../server/crowd/bitmap';
import type { WorkflowDefinition } from '../../core/model/workflow';
import { validateWorkflow } from '../../core/model/validate';
import { upsertProfiles } from '../../server/profiles/profiles';
import { db, database } from '../helpers/app-db';
import { advance, crowd, range, restartEngine, start, startHarness, stepUsers, workflow, type Harness } from '../fixtures/engine/harness';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

// Users by the zone their profile names. Amsterdam leaves CET (UTC+1) for CEST (UTC+2) at 01:00 UTC on Sunday
// 2026-03-29; New York is on EDT (UTC−4) since 2026-03-08; Tokyo is UTC+9 all year.
const AMSTERDAM = [1, 2, 3];
const NEW_YORK = [4, 5, 6];
const TOKYO = [7, 8, 9];
/** No usable zone: no attribute (10), a name no zone has (11), a number (12), an empty string (13). */
const NO_ZONE = [10, 11, 12, 13];
const EVERYONE = range(1, 13);

/** Two days of "09:00 wherever they are": Saturday's firing into `sunday`, Sunday's into `done`. */
const twoMornings: WorkflowDefinition = {
  steps: [
    { name: 'saturday', kind: 'timer', cron: '0 0 9 * * SAT', tzFromProfile: 'timezone', next: 'sunday' },
    { name: 'sunday', kind: 'timer', cron: '0 0 9 * * SUN', tzFromProfile: 'timezone', next: 'done' },
    { name: 'done', kind: 'direct' },
  ],
};

async function zoneProfiles(harness: Harness): Promise<void> {
  const zoned = (users: number[], timezone: unknown) => users.map((user) => ({ user, attributes: { timezone, plan: 'pro' } }));
  await upsertProfiles(database(), harness.tenantId, [
    ...zoned(AMSTERDAM, 'Europe/Amsterdam'),
    ...zoned(NEW_YORK, 'America/New_York'),
    ...zoned(TOKYO, 'Asia/Tokyo'),
    { user: 10, attributes: { plan: 'free' } },
    ...zoned([11], 'Mars/Olympus'),
    ...zoned([12], 5),
    ...zoned([13], ''),
  ]);
}

/** The bulk moves out of `step`, oldest first: when, which partition, which users. */
async function movesOutOf(instanceId: string, step: string) {
  const rows = await db().journal.findMany({ where: { instanceId, fromStep: step }, orderBy: { seq: 'asc' } });
  return rows.map((r) => ({
    at: new Date(Number(r.timeMs)).toISOString(),
    partition: r.partition,
    users: r.bitmap ? RoaringBitmap32.deserialize(r.bitmap, 'portable').toArray() : [Number(r.user)],
    bulk: r.bitmap !== null,
  }));
}

/** Moves grouped by time: the users each firing moved, and whether each partition journaled one bulk move for it. */
function firings(moves: Awaited<ReturnType<typeof movesOutOf>>) {
  const byTime = new Map<string, { users: number[]; rowsPerPartition: number[] }>();
  for (const move of moves) {
    const firing = byTime.get(move.at) ?? { users: [], rowsPerPartition: [0, 0] };
    firing.users.push(...move.users);
    firing.rowsPerPartition[move.partition]++;
    byTime.set(move.at, firing);
  }
  return [...byTime].map(([at, { users, rowsPerPartition }]) => ({ at, users: users.sort((a, b) => a - b), rowsPerPartition }));
}

const utc = (day: number, hour: number, minute = 0, second = 0) => Date.UTC(2026, 2, day, hour, minute, second);

describe('local-time timers: the cron fires in each user’s own zone, read from a profile attribute', () => {
  it('validates: the default zone must be a known zone, the attribute a path without `profile.`', () => {
    expect(validateWorkflow(twoMornings).ok).toBe(true);
    const timer = (fields: Record<string, unknown>) =>
      validateWorkflow({
        steps: [
          { name: 'wake', kind: 'timer', cron: '0 0 9 * * *', next: 'end', ...fields },
          { name: 'end', kind: 'direct' },
        ],
      });
    const problems = (result: ReturnType<typeof validateWorkflow>) => (result.ok ? [] : result.problems.map((p) => `${p.code}: ${p.message}`));
    expect(problems(timer({ tzFromProfile: 'address.tz', tz: 'Europe/Lisbon' }))).toEqual([]);
    expect(problems(timer({ tzFromProfile: 'timezone', tz: 'Mars/Olympus' }))).toEqual([
      'bad_time_zone: Step "wake" tz "Mars/Olympus" is not an IANA time zone; write e.g. "Europe/Amsterdam", "America/New_York" or "UTC"',
    ]);
    const badPath =
      'invalid_field: Step "wake" tzFromProfile: An attribute path is keys joined by dots, without the `profile.` prefix or spaces: e.g. timezone or address.tz';
    for (const path of ['profile.timezone', '', 'time zone', 'a..b', '.tz']) expect(problems(timer({ tzFromProfile: path }))).toEqual([badPath]);
    expect(problems(timer({ tzFromProfile: 7 }))).toEqual(['invalid_field: Step "wake" tzFromProfile: Invalid input: expected string, received number']);
  });

  it('each zone moves at its local 09:00 as one bulk move per partition, across Amsterdam’s spring DST change; no usable zone means the default (UTC)', async () => {
    // Friday 2026-03-27 14:00 UTC: New York's Friday 09:00 (13:00 UTC) has passed.
    h = await startHarness({ partitions: 2, userBlock: 1 }, new ManualClock(utc(27, 14)));
    await zoneProfiles(h);
    await crowd(h, 'c', EVERYONE);
    const id = await start(h, await workflow(h, twoMornings), 'c');
    const to = async (time: number) => advance(h!, time - h!.clock.now());
    const where = async () => ({
      saturday: await stepUsers(h!, id, 'saturday'),
      sunday: await stepUsers(h!, id, 'sunday'),
      done: await stepUsers(h!, id, 'done'),
    });

    await to(utc(27, 23, 59, 59));
    expect(await where()).toEqual({ saturday: EVERYONE, sunday: [], done: [] });
    await to(utc(28, 0)); // 09:00 in Tokyo
    expect(await where()).toEqual({ saturday: [...AMSTERDAM, ...NEW_YORK, ...NO_ZONE], sunday: TOKYO, done: [] });
    await to(utc(28, 7, 59, 59));
    expect((await where()).sunday).toEqual(TOKYO);
    await to(utc(28, 8)); // 09:00 CET in Amsterdam
    expect(await where()).toEqual({ saturday: [...NEW_YORK, ...NO_ZONE], sunday: [...AMSTERDAM, ...TOKYO], done: [] });
    await to(utc(28, 9)); // 09:00 UTC: the users without a usable zone
    expect(await where()).toEqual({ saturday: NEW_YORK, sunday: [...AMSTERDAM, ...TOKYO, ...NO_ZONE], done: [] });
    await to(utc(28, 13)); // 09:00 EDT in New York
    expect(await where()).toEqual({ saturday: [], sunday: EVERYONE, done: [] });

    await to(utc(29, 0)); // Sunday 09:00 in Tokyo
    expect((await where()).done).toEqual(TOKYO);
    await to(utc(29, 6, 59, 59));
    expect((await where()).done).toEqual(TOKYO);
    await to(utc(29, 7)); // 09:00 CEST: an hour earlier in UTC than Saturday's
    expect((await where()).done).toEqual([...AMSTERDAM, ...TOKYO]);
    // Each firing time is stepped to: a tick that runs after the clock has passed two zones' 09:00 moves both then.
    await to(utc(29, 9));
    await to(utc(29, 13));
    expect(await where()).toEqual({ saturday: [], sunday: [], done: EVERYONE });

    const saturday = firings(await movesOutOf(id, 'saturday'));
    expect(saturday.map(({ at, users }) => ({ at, users }))).toEqual([
      { at: '2026-03-28T00:00:00.000Z', users: TOKYO },
      { at: '2026-03-28T08:00:00.000Z', users: AMSTERDAM },
      { at: '2026-03-28T09:00:00.000Z', users: NO_ZONE },
      { at: '2026-03-28T13:00:00.000Z', users: NEW_YORK },
    ]);
    const sunday = firings(await movesOutOf(id, 'sunday'));
    expect(sunday.map((f) => f.at)).toEqual(['2026-03-29T00:00:00.000Z', '2026-03-29T07:00:00.000Z', '2026-03-29T09:00:00.000Z', '2026-03-29T13:00:00.000Z']);
    // Users of one zone are split over the 2 partitions by id: each partition moved its part as ONE bulk move.
    for (const moves of [await movesOutOf(id, 'saturday'), await movesOutOf(id, 'sunday')]) expect(moves.every((m) => m.bulk)).toBe(true);
    for (const firing of [...saturday, ...sunday]) expect(firing.rowsPerPartition).toEqual([1, 1]);
  });

  it('a restart between zones replays the journaled firings: nobody moves twice or early, the next zones fire on time', async () => {
    h = await startHarness({ partitions: 2, userBlock: 1 }, new ManualClock(utc(27, 14)));
    await zoneProfiles(h);
    await crowd(h, 'c', EVERYONE);
    const id = await start(h, await workflow(h, twoMornings), 'c');
    const to = async (time: number) => advance(h!, time - h!.clock.now());
    await to(utc(28, 0));
    await to(utc(28, 8)); // Tokyo and Amsterdam have fired
    await restartEngine(h);
    await to(utc(28, 8, 30));
    expect(await stepUsers(h, id, 'sunday')).toEqual([...AMSTERDAM, ...TOKYO]);
    expect(await stepUsers(h, id, 'done')).toEqual([]);
    await to(utc(28, 9));
    expect(await stepUsers(h, id, 'saturday')).toEqual(NEW_YORK);
    await restartEngine(h);
    await to(utc(28, 13));
    expect(await stepUsers(h, id, 'sunday')).toEqual(EVERYONE);
    expect(firings(await movesOutOf(id, 'saturday')).map((f) => f.users)).toEqual([TOKYO, AMSTERDAM, NO_ZONE, NEW_YORK]);
    expect(await movesOutOf(id, 'sunday')).toEqual([]);
  });

  it('users one firing moves into another timer step with the same cron wait there for its next firing (local-time and UTC timers)', async () => {
    h = await startHarness({ partitions: 2, userBlock: 1 }, new ManualClock(utc(27, 14)));
    await zoneProfiles(h);
    await crowd(h, 'c', EVERYONE);
    const daily = (tzFromProfile?: string) =>
      workflow(h!, {
        steps: [
          { name: 'first', kind: 'timer', cron: '0 0 9 * * *', ...(tzFromProfile ? { tzFromProfile } : {}), next: 'second' },
          { name: 'second', kind: 'timer', cron: '0 0 9 * * *', ...(tzFromProfile ? { tzFromProfile } : {}), next: 'done' },
          { name: 'done', kind: 'direct' },
        ],
      });
    const local = await start(h, await daily('timezone'), 'c');
    const plain = await start(h, await daily(), 'c');
    await advance(h, utc(28, 9) - h.clock.now()); // Tokyo, Amsterdam and UTC (the users without a zone) had their 09:00
    expect(await stepUsers(h, local, 'second')).toEqual([...AMSTERDAM, ...TOKYO, ...NO_ZONE]);
    expect(await stepUsers(h, plain, 'second')).toEqual(EVERYONE);
    for (const id of [local, plain]) expect(await stepUsers(h, id, 'done')).toEqual([]);
    await advance(h, utc(29, 9) - h.clock.now());
    expect(await stepUsers(h, local, 'done')).toEqual([...AMSTERDAM, ...TOKYO, ...NO_ZONE]);
    expect(await stepUsers(h, plain, 'done')).toEqual(EVERYONE);
  });

  it('with a default zone and a condition: users without a usable zone fire in the default zone, and only matching users move', async () => {
    h = await startHarness({ partitions: 2, userBlock: 1 }, new ManualClock(utc(27, 14)));
    await zoneProfiles(h);
    await crowd(h, 'c', EVERYONE);
    const id = await start(
      h,
      await workflow(h, {
        steps: [
          { name: 'wake', kind: 'timer', cron: '0 0 9 * * *', tzFromProfile: 'timezone', tz: 'Asia/Tokyo', condition: 'profile.plan == "pro"', next: 'end' },
          { name: 'end', kind: 'direct' },
        ],
      }),
      'c',
    );
    await advance(h, utc(28, 0) - h.clock.now()); // 09:00 in Tokyo: Tokyo's users and, in Tokyo's zone, those without one
    // User 10 has no plan "pro": it stays, and fires again at Tokyo's next 09:00 if it becomes "pro".
    expect(await stepUsers(h, id, 'end')).toEqual([...TOKYO, 11, 12, 13]);
    expect(firings(await movesOutOf(id, 'wake')).map((f) => f.users)).toEqual([[...TOKYO, 11, 12, 13]]);
  });
});
