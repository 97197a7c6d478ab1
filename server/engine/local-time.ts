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
//
// The grouping itself (server/profiles/zones.ts) is shared with quiet hours, which group a delivery's users the same way.
import type { RoaringBitmap32 } from '../crowd/bitmap';
import { nextCronTime } from '../../core/model/cron';
import type { TimerStep } from '../../core/model/workflow';
import type { ProfileIndex } from '../profiles/index-tenant';
import { usersByZone, zonesIn } from '../profiles/zones';

/** The zone of users without a valid zone of their own (and of every user of a timer without `tzFromProfile`). */
const defaultZone = (step: TimerStep) => step.tz ?? 'UTC';

/**
 * What a timer step plans after firing (or starting) at `at`: its next firing, or for a local-time timer the
 * provisional "due from just after `at`" that its next tick replaces by a plan over the zones present.
 */
export function plannedAfter(step: TimerStep, at: number): number {
  return step.tzFromProfile ? at + 1 : nextCronTime(step.cron, at, step.tz);
}

/** The zones a local-time timer fires in: each valid zone value of its attribute in the tenant's profiles, and the default. */
export function zonesPresent(profiles: ProfileIndex, step: TimerStep): string[] {
  return zonesIn(profiles, step.tzFromProfile, defaultZone(step));
}

/** The earliest firing strictly after `after` in any zone present. */
export function nextLocalFiring(profiles: ProfileIndex, step: TimerStep, after: number): number {
  let next = Number.POSITIVE_INFINITY;
  for (const zone of zonesPresent(profiles, step)) next = Math.min(next, nextCronTime(step.cron, after, zone));
  return next;
}

/** `users` (a shard's users of the step) grouped by the zones with a firing in [`due`, `now`]; other zones' users stay. */
export function dueZoneGroups(profiles: ProfileIndex, step: TimerStep, users: RoaringBitmap32, due: number, now: number): RoaringBitmap32[] {
  const fires = (zone: string) => nextCronTime(step.cron, due - 1, zone) <= now;
  return [...usersByZone(profiles, step.tzFromProfile, defaultZone(step), users, fires).values()];
}
