import { describe, expect, it, onTestFinished } from 'vitest';
import { ManualClock } from '../../server/clock';
import { LAGGING_MAX_MS, LAGGING_QUIET_MS, profilesWrittenElsewhere, profileWriteNotice } from '../../server/profiles/cluster-writes';
import { newId } from '../../server/ids';
import { dropProfileIndex, heldProfiles, profileIndex, saveProfileSnapshot } from '../../server/profiles/index-store';
import { app } from '../../server/app';
import { createApp } from '../../server/create-app';
import type { Database } from '../../server/storage/database';
import { upsertProfiles } from '../../server/profiles/profiles';
import { db, database } from '../helpers/app-db';
import { tenantRow } from '../helpers/tenant-row';

// Profile writes another cluster member committed: the rows and the seq change in the database (written here with
// Prisma, as that member's transaction would leave them), and this process hears only the notice.

async function writeElsewhere(tenantId: string, rows: { user: number; attributes: Record<string, unknown> | null }[]): Promise<number> {
  for (const { user, attributes } of rows) {
    const key = { tenantId_user: { tenantId, user: BigInt(user) } };
    if (attributes === null) await db().profile.delete({ where: key });
    else
      await db().profile.upsert({
        where: key,
        create: { tenantId, user: BigInt(user), attributes: JSON.stringify(attributes) },
        update: { attributes: JSON.stringify(attributes) },
      });
  }
  const state = await db().profileIndexState.update({ where: { tenantId }, data: { seq: { increment: 1 } } });
  return Number(state.seq);
}

async function storedProfiles(tenantId: string) {
  const rows = await db().profile.findMany({ where: { tenantId }, orderBy: { user: 'asc' } });
  return Object.fromEntries(rows.map((row) => [Number(row.user), JSON.parse(row.attributes)]));
}

/** An app of the test's own over the file's storage, on a ManualClock (its close leaves the storage open). */
function appOnManualClock(): { database: Database; clock: ManualClock } {
  const clock = new ManualClock(Date.now());
  const own = createApp({ clock, storage: app().storage });
  onTestFinished(() => own.close());
  return { database: own.database, clock };
}

describe('profile writes of other cluster members', () => {
  it('applies a write that names its users by reading their rows, keeping the index (no reload)', async () => {
    const tenantId = await tenantRow(newId('tn'));
    await upsertProfiles(database(), tenantId, [
      { user: 1, attributes: { plan: 'pro' } },
      { user: 2, attributes: { plan: 'free' } },
    ]);
    const index = await profileIndex(database(), tenantId);
    const held = heldProfiles(database(), tenantId)!;

    const changed = [
      { user: 1, attributes: null },
      { user: 2, attributes: { plan: 'pro', age: 40 } },
      { user: 3, attributes: { plan: 'pro' } },
    ];
    const seq = await writeElsewhere(tenantId, changed);
    const notice = profileWriteNotice(tenantId, seq, changed);
    expect(notice).toHaveLength(3); // three users fit in a NOTIFY
    await profilesWrittenElsewhere(database(), tenantId, seq, notice[2] as string);

    expect(heldProfiles(database(), tenantId)).toBe(held);
    expect(held.index).toBe(index);
    expect(held.seq).toBe(seq);
    expect(index.equals('plan', 'pro').toArray()).toEqual([2, 3]);
    expect(Object.fromEntries(index.materialize(index.users))).toEqual(await storedProfiles(tenantId));

    // A notice of a write the index already has changes nothing.
    await profilesWrittenElsewhere(database(), tenantId, seq, notice[2] as string);
    expect(held.seq).toBe(seq);
  });

  it('forgets an index that missed writes only once they go quiet, or at the latest after the bound', async () => {
    const tenantId = await tenantRow(newId('tn'));
    const { database, clock } = appOnManualClock();
    await upsertProfiles(database, tenantId, [{ user: 1, attributes: { plan: 'pro' } }]);
    await profileIndex(database, tenantId);
    const held = heldProfiles(database, tenantId)!;
    const many = Array.from({ length: 5_000 }, (_, i) => ({ user: i * 7_919 }));
    expect(profileWriteNotice(tenantId, held.seq + 1, many)).toHaveLength(2); // too many users to name

    // An import elsewhere: a write every half quiet period never goes quiet; the index still goes at the bound, once.
    for (let elapsed = 0, write = 1; elapsed < LAGGING_MAX_MS; elapsed += LAGGING_QUIET_MS / 2, write++) {
      expect(heldProfiles(database, tenantId)).toBe(held);
      await profilesWrittenElsewhere(database, tenantId, held.seq + write, undefined);
      await clock.advance(LAGGING_QUIET_MS / 2);
    }
    expect(heldProfiles(database, tenantId)).toBeUndefined();
  });

  it('leaves no wait behind when an index that missed writes is dropped: the wait belongs to the index', async () => {
    const tenantId = await tenantRow(newId('tn'));
    const { database, clock } = appOnManualClock();
    await upsertProfiles(database, tenantId, [{ user: 1, attributes: { plan: 'pro' } }]);
    await profileIndex(database, tenantId);
    const held = heldProfiles(database, tenantId)!;
    const waiting = clock.pendingSleepers(); // the snapshot owed for the write above

    await profilesWrittenElsewhere(database, tenantId, held.seq + 1, undefined);
    expect(clock.pendingSleepers()).toBe(waiting + 1);
    dropProfileIndex(database, tenantId);
    expect(clock.pendingSleepers()).toBe(0);
  });

  it('drops the index when a local write follows one committed elsewhere whose notice has not arrived, never snapshotting the gap', async () => {
    const tenantId = await tenantRow(newId('tn'));
    await upsertProfiles(database(), tenantId, [{ user: 1, attributes: { plan: 'pro' } }]);
    await profileIndex(database(), tenantId);
    const held = heldProfiles(database(), tenantId)!;

    const elsewhere = [{ user: 2, attributes: { plan: 'pro' } }];
    const seq = await writeElsewhere(tenantId, elsewhere); // its notice is still on the way
    await upsertProfiles(database(), tenantId, [{ user: 3, attributes: { plan: 'free' } }]);
    expect(held.index).toBeNull();
    await saveProfileSnapshot(database(), tenantId);
    const state = await db().profileIndexState.findUniqueOrThrow({ where: { tenantId } });
    expect(Number(state.seq)).toBe(seq + 1);
    expect(Number((await db().profileIndexSnapshot.findUnique({ where: { tenantId } }))?.seq ?? -1)).not.toBe(seq + 1);

    await profilesWrittenElsewhere(database(), tenantId, seq, profileWriteNotice(tenantId, seq, elsewhere)[2] as string); // late
    const index = await profileIndex(database(), tenantId);
    expect(index.equals('plan', 'pro').toArray()).toEqual([1, 2]);
    expect(Object.fromEntries(index.materialize(index.users))).toEqual(await storedProfiles(tenantId));
  });
});
