// Users grouped by the time zone a profile attribute names, with the profile index's equality bitmap per distinct
// zone value (never per user): local-time timers (server/engine/local-time.ts) fire each zone's group when the cron
// fires there, and quiet hours (server/webhooks/quiet-holding.ts) hold each zone's group until the window opens there.
// Users whose attribute is missing, not a string or not a zone the cron library knows belong to the fallback zone.
import { deserializeBitmap, RoaringBitmap32, serializeBitmap } from '../crowd/bitmap';
import { isTimeZone } from '../../core/model/cron';
import { isQuietAt } from '../../core/model/quiet-hours';
import type { Database } from '../storage/database';
import { profileIndex } from './index-store';
import type { ProfileIndex } from './index-tenant';
import { pathKey } from '../../core/profile-paths';

/**
 * The attribute holding users' zones, unless it holds more distinct strings than the index keeps equality bitmaps for:
 * there are a few hundred IANA zones, so such an attribute (an e-mail picked by mistake) holds none worth a check per
 * value on every tick, and its users belong to the fallback zone.
 */
function zoneField(profiles: ProfileIndex, attribute: string | undefined) {
  const field = attribute ? profiles.path(pathKey(attribute.split('.'))) : undefined;
  return field?.highCardinality ? undefined : field;
}

/** The valid zones of an attribute in the tenant's profiles, and `fallback`. */
export function zonesIn(profiles: ProfileIndex, attribute: string | undefined, fallback: string): string[] {
  const zones = new Set([fallback]);
  for (const value of zoneField(profiles, attribute)?.distinctStrings() ?? []) if (isTimeZone(value)) zones.add(value);
  return [...zones];
}

/** Per index: the users holding a valid zone in a field, as of an index version (a union over the whole index). Weakly
 * keyed by the field, which one app's profile index owns: an entry goes with its field, and no other app reaches it. */
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
 * `users` grouped by the zones `selected` accepts: per such zone value of `attribute`, the users holding it, and under
 * `fallback` (when selected) also every user without a valid zone of their own; users of other zones are left out. One
 * AND over `users` per selected zone and one AND NOT for the fallback group: each costs a pass over `users`, so zones
 * not selected cost nothing (the union of zoned users is computed once per index version). Never a loop over users.
 */
export function usersByZone(
  profiles: ProfileIndex,
  attribute: string | undefined,
  fallback: string,
  users: RoaringBitmap32,
  selected: (zone: string) => boolean,
): Map<string, RoaringBitmap32> {
  const field = zoneField(profiles, attribute);
  const groups = new Map<string, RoaringBitmap32>();
  if (field) {
    for (const [value, holders] of field.strings) {
      if (!isTimeZone(value) || !selected(value)) continue;
      const group = RoaringBitmap32.and(users, holders);
      if (!group.isEmpty) groups.set(value, group);
    }
  }
  if (selected(fallback)) {
    const rest = field ? RoaringBitmap32.andNot(users, usersWithAZone(profiles, field)) : users.clone();
    const same = groups.get(fallback);
    if (same) same.orInPlace(rest);
    else if (!rest.isEmpty) groups.set(fallback, rest);
  }
  return groups;
}

/** What quiet hours ask of the index (where it lives: the engine thread): the users of a move, a rule's window and its moment. */
export type QuietZoneRequest = { attribute: string; fallback: string; start: string; end: string; now: number; users: Uint8Array };

/** The groups quiet hours hold (each zone's users as portable roaring bytes) and the rest, who are sent to now. */
export type QuietZoneGroups = { groups: { zone: string; users: Uint8Array; count: number }[]; rest: Uint8Array | null };

/**
 * `users` (portable roaring bytes) grouped by the zones of the attribute (and the fallback) that are inside the window
 * [start, end) at `now`: one bitmap per such zone, and `rest`, the users in none of them (null when no group has
 * anyone: all go now). The bitmap work (an AND per quiet zone, their OR, one ANDNOT) is done here, where the index is
 * (the engine thread), so the thread that answers HTTP only writes the bytes it gets back; the event loop is let go
 * after each zone's group (a 10M-user move is tens of milliseconds of bitmap work a zone).
 */
export async function quietZoneGroups(database: Database, tenantId: string, request: QuietZoneRequest): Promise<QuietZoneGroups> {
  const profiles = await profileIndex(database, tenantId);
  const quiet = zonesIn(profiles, request.attribute, request.fallback).filter((zone) => isQuietAt(request, request.now, zone));
  if (quiet.length === 0) return { groups: [], rest: null };
  const users = deserializeBitmap(request.users);
  const groups: QuietZoneGroups['groups'] = [];
  let rest = users;
  for (const zone of quiet) {
    const group = usersByZone(profiles, request.attribute, request.fallback, users, (candidate) => candidate === zone).get(zone);
    if (group) {
      groups.push({ zone, users: serializeBitmap(group), count: group.size });
      rest = RoaringBitmap32.andNot(rest, group);
    }
    await new Promise((resolve) => setImmediate(resolve));
  }
  return groups.length ? { groups, rest: serializeBitmap(rest) } : { groups: [], rest: null };
}
