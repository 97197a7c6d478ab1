// Profile writes made on another member of the cluster. Each member keeps its own profile index per tenant
// (server/profiles/index-store.ts). The notice of a committed write names the tenant, the write's seq and, when they
// fit in a NOTIFY, its users (portable roaring, base64). A member whose index is at the write before reads just those
// users' rows and applies them (handing the write on to its engine thread like one of its own). A member that missed
// a write, or heard of one too big to name its users (an import chunk), forgets its index only once such writes go
// quiet (at the latest some seconds after the first), so a 10M import elsewhere makes it reload once at the end
// instead of once per chunk; until then its index lags the other members' by those writes.
import roaring from 'roaring';
import { callAfter } from '../clock';
import type { Database } from '../storage/database';
import { dropProfileIndex, heldProfiles, relayProfileWrite, type TenantProfiles } from './index-store';
import type { ProfileChange } from './index-tenant';
import { parsedProfiles } from './profiles';
import { profilesOf } from '../storage/profile-reads';

const { RoaringBitmap32: Bitmap } = roaring;

/** Users of a write named in its notice at most (their rows are read back by every member). */
const MAX_NAMED_USERS = 2_000;
/** Base64 of the users' bitmap at most, so the notice stays within NOTIFY's 8,000 bytes. */
const MAX_USERS_TEXT = 5_000;
/** A lagging index is forgotten once no write was heard for this long… */
export const LAGGING_QUIET_MS = 1_000;
/** …or this long after the first write it missed, whichever comes first. */
export const LAGGING_MAX_MS = 10_000;

/** The notice's arguments for a committed write: [tenant, seq] and the users' bitmap when small enough. */
export function profileWriteNotice(tenantId: string, seq: number, changes: readonly ProfileChange[] | undefined): unknown[] {
  if (!changes || changes.length > MAX_NAMED_USERS) return [tenantId, seq];
  const users = Bitmap.from(changes.map((change) => change.user));
  users.runOptimize();
  const text = Buffer.from(users.serialize('portable')).toString('base64');
  return text.length <= MAX_USERS_TEXT ? [tenantId, seq, text] : [tenantId, seq];
}

/**
 * The notice arguments of a write made in the engine thread, as they cross to the request thread's cluster channel:
 * its changes only when the notice could name their users (an import chunk's 5,000 are not copied across for nothing).
 */
export function slimProfileWriteNotice(args: unknown[]): unknown[] {
  const [tenantId, seq, changes] = args as [string, number, ProfileChange[] | undefined];
  return [tenantId, seq, changes && changes.length <= MAX_NAMED_USERS ? changes : undefined];
}

/** Another member committed profile write `seq` of the tenant (`usersText`: its users, when named). */
export function profilesWrittenElsewhere(database: Database, tenantId: string, seq: number, usersText: string | undefined): Promise<void> {
  const held = heldProfiles(database, tenantId);
  if (!held || !(held.seq < seq)) return Promise.resolve(); // no index here (the next load reads the rows), or it has the write
  if (usersText === undefined) return Promise.resolve(forgetWhenQuiet(tenantId, held));
  return held
    .exclusive(async () => {
      if (!held.index || held.seq >= seq) return;
      if (held.seq !== seq - 1) return forgetWhenQuiet(tenantId, held);
      const users = Bitmap.deserialize(Buffer.from(usersText, 'base64'), 'portable');
      const after = parsedProfiles(await profilesOf(held.database, tenantId, users.toArray()));
      const before = held.index.materialize(users);
      const changes = users.toArray().map((user) => ({ user, before: before.get(user), after: after.get(user) }));
      try {
        held.index.apply(changes);
      } catch (error) {
        held.index = null; // the next use rebuilds it from the database
        throw error;
      }
      held.seq = seq;
      relayProfileWrite(database, tenantId, changes, seq);
    })
    .catch((error: Error) => console.warn(`[crowdflow] applying a profile write of tenant ${tenantId} from another member failed:`, error.message));
}

function forgetWhenQuiet(tenantId: string, held: TenantProfiles): void {
  const now = held.clock.now();
  held.lagging?.cancel();
  const since = held.lagging?.since ?? now;
  const cancel = callAfter(held.clock, Math.min(LAGGING_QUIET_MS, since + LAGGING_MAX_MS - now), () => {
    held.lagging = undefined;
    if (heldProfiles(held.database, tenantId) === held) dropProfileIndex(held.database, tenantId);
  });
  held.lagging = { since, cancel };
}
