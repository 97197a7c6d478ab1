// Local-time timers: a timer step with `tzFromProfile` fires in each user's own time zone ("09:00 wherever they are").
// Users are grouped by the zone their profile names with the profile index's equality bitmap per distinct value (never
// per user), and a zone's group moves as ONE bulk move per partition when the cron fires in that zone. Users whose
// attribute is missing, not a string or not a zone the cron library knows use the step's `tz` (UTC when absent).
//
// Like any timer, the step keeps one planned time per shard (shard.cronNext): the earliest next firing over the zones
// present in the tenant's profiles and the default zone, computed once per distinct zone. When that time comes, every
// zone with a firing between it and now fires; zones with no users in the step move nobody.
//
// A journaled firing cannot say which zones were present when it ran, so after a firing (and at an instance's start)
// the plan is provisional: "due just after that time" (plannedAfter). Its first tick fires exactly the zones whose
// firing came since, and plans over the zones present then. Recovery therefore needs no profile index, and a zone
// that appears in profiles later is fired from the next plan on.
import { RoaringBitmap32 } from '../crowd/bitmap';
import { isTimeZone, nextCronTime } from '../model/cron';
import type { TimerStep } from '../model/workflow';
import type { ProfileIndex } from '../profiles/index-tenant';
import { pathKey } from '../profiles/paths';

/** The zone of users without a valid zone of their own (and of every user of a timer without `tzFromProfile`). */
const defaultZone = (step: TimerStep) => step.tz ?? 'UTC';

/**
 * What a timer step plans after firing (or starting) at `at`: its next firing, or for a local-time timer the
 * provisional "due from just after `at`" that its next tick replaces by a plan over the zones present.
 */
export function plannedAfter(step: TimerStep, at: number): number {
  return step.tzFromProfile ? at + 1 : nextCronTime(step.cron, at, step.tz);
}

/**
 * The attribute holding users' zones, unless it holds more distinct strings than the index keeps equality bitmaps for:
 * there are a few hundred IANA zones, so such an attribute (an e-mail picked by mistake) holds none worth a check per
 * value on every tick, and its users fire in the default zone.
 */
function zoneField(profiles: ProfileIndex, step: TimerStep) {
  const field = step.tzFromProfile ? profiles.path(pathKey(step.tzFromProfile.split('.'))) : undefined;
  return field?.highCardinality ? undefined : field;
}

/** The zones a local-time timer fires in: each valid zone value of its attribute in the tenant's profiles, and the default. */
export function zonesPresent(profiles: ProfileIndex, step: TimerStep): string[] {
  const zones = new Set([defaultZone(step)]);
  for (const value of zoneField(profiles, step)?.distinctStrings() ?? []) if (isTimeZone(value)) zones.add(value);
  return [...zones];
}

/** The earliest firing strictly after `after` in any zone present. */
export function nextLocalFiring(profiles: ProfileIndex, step: TimerStep, after: number): number {
  let next = Number.POSITIVE_INFINITY;
  for (const zone of zonesPresent(profiles, step)) next = Math.min(next, nextCronTime(step.cron, after, zone));
  return next;
}

/** Per index: the users holding a valid zone in a field, as of an index version (a union over the whole index). */
const zonedUsers = new WeakMap<object, { version: number; users: RoaringBitmap32 }>();

function usersWithAZone(profiles: ProfileIndex, field: NonNullable<ReturnType<typeof zoneField>>): RoaringBitmap32 {
  const cached = zonedUsers.get(field);
  if (cached?.version === profiles.version) return cached.users;
  const holders = [...field.strings].filter(([value]) => isTimeZone(value)).map(([, users]) => users);
  const users = RoaringBitmap32.orMany(holders);
  zonedUsers.set(field, { version: profiles.version, users });
  return users;
}

/**
 * `users` (a shard's users of the step) grouped by the zones with a firing in [`due`, `now`]: the users holding each
 * such zone, and with the default zone also every user without a valid zone of their own. Other zones' users stay.
 * One AND over the shard's users per firing zone and one AND NOT for the default group: each costs a pass over the
 * shard's users, so zones that do not fire cost nothing (the union of zoned users is computed once per index version).
 */
export function dueZoneGroups(profiles: ProfileIndex, step: TimerStep, users: RoaringBitmap32, due: number, now: number): RoaringBitmap32[] {
  const fires = (zone: string) => nextCronTime(step.cron, due - 1, zone) <= now;
  const field = zoneField(profiles, step);
  const groups = new Map<string, RoaringBitmap32>();
  if (field) {
    for (const [value, holders] of field.strings) {
      if (!isTimeZone(value) || !fires(value)) continue;
      const group = RoaringBitmap32.and(users, holders);
      if (!group.isEmpty) groups.set(value, group);
    }
  }
  const fallback = defaultZone(step);
  if (fires(fallback)) {
    const rest = field ? RoaringBitmap32.andNot(users, usersWithAZone(profiles, field)) : users.clone();
    const same = groups.get(fallback);
    if (same) same.orInPlace(rest);
    else if (!rest.isEmpty) groups.set(fallback, rest);
  }
  return [...groups.values()];
}
