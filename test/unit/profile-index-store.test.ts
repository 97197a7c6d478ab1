import roaring from 'roaring';
import { describe, expect, it } from 'vitest';
import { newId } from '../../server/ids';
import {
  dropProfileIndex,
  profileIndex,
  profileIndexes,
  profileIndexLoad,
  profileSnapshotDueAt,
  saveProfileSnapshot,
  SNAPSHOT_QUIET_MS,
} from '../../server/profiles/index-store';
import { deleteProfile, upsertProfiles } from '../../server/profiles/profiles';
import { db, database } from '../helpers/app-db';
import { createTenant, deleteTenant } from '../../server/tenants/tenants';
import { tenantRow } from '../helpers/tenant-row';
import { app, registerApp } from '../../server/app';
import { createApp } from '../../server/create-app';
import { testProvider } from '../helpers/real-storage-errors';

const { RoaringBitmap32 } = roaring;

async function storedProfiles(tenantId: string) {
  const rows = await db().profile.findMany({ where: { tenantId }, orderBy: { user: 'asc' } });
  return Object.fromEntries(rows.map((row) => [Number(row.user), JSON.parse(row.attributes)]));
}

async function indexedProfiles(tenantId: string) {
  const index = await profileIndex(database(), tenantId);
  return Object.fromEntries(index.materialize(index.users));
}

describe('the tenant profile index in this process', () => {
  it('follows upserts (merge) and deletes, and a restart loads the snapshot when it is current, else the rows', async () => {
    const tenantId = await tenantRow(newId('tn'));
    await upsertProfiles(database(), tenantId, [
      { user: 1, attributes: { plan: 'pro', age: 31, address: { country: 'NL' } } },
      { user: 2, attributes: { plan: 'free', age: 18.5 } },
      { user: 3, attributes: { plan: 'pro', signup: '2026-01-02T03:04:05Z' } },
    ]);
    await upsertProfiles(database(), tenantId, [{ user: 1, attributes: { age: null, address: { city: 'Utrecht' } } }]);
    const index = await profileIndex(database(), tenantId);
    expect(index.equals('plan', 'pro').toArray()).toEqual([1, 3]);
    expect(index.compare('age', '>=', 18).toArray()).toEqual([2]);
    expect(index.get(1)).toEqual({ plan: 'pro', address: { country: 'NL', city: 'Utrecht' } });
    await deleteProfile(database(), tenantId, 3);
    expect(index.equals('plan', 'pro').toArray()).toEqual([1]);
    expect(await indexedProfiles(tenantId)).toEqual(await storedProfiles(tenantId));

    await saveProfileSnapshot(database(), tenantId);
    dropProfileIndex(database(), tenantId);
    expect(await indexedProfiles(tenantId)).toEqual(await storedProfiles(tenantId));
    expect(profileIndexLoad(database(), tenantId)?.source).toBe('snapshot');

    // A write after the snapshot and no snapshot since (a crash): the next load rebuilds from the rows.
    await upsertProfiles(database(), tenantId, [{ user: 4, attributes: { plan: 'trial', tags: ['a', 'b'] } }]);
    dropProfileIndex(database(), tenantId);
    expect(await indexedProfiles(tenantId)).toEqual(await storedProfiles(tenantId));
    expect(profileIndexLoad(database(), tenantId)?.source).toBe('rows');
    // … and writes a fresh snapshot, so the restart after that reads it.
    dropProfileIndex(database(), tenantId);
    await profileIndex(database(), tenantId);
    expect(profileIndexLoad(database(), tenantId)?.source).toBe('snapshot');
    expect((await profileIndex(database(), tenantId)).has('tags', RoaringBitmap32.of(1, 2, 4)).toArray()).toEqual([4]);
  });

  it('schedules the snapshot a quiet period after the last write instead of writing it at every write', async () => {
    const tenantId = await tenantRow(newId('tn'));
    const snapshotSeq = async () => Number((await db().profileIndexSnapshot.findUnique({ where: { tenantId } }))!.seq);
    await upsertProfiles(database(), tenantId, [{ user: 1, attributes: { plan: 'pro' } }]);
    await saveProfileSnapshot(database(), tenantId);
    const saved = await snapshotSeq();
    expect(profileSnapshotDueAt(database(), tenantId)).toBeNull();

    const firstWrite = Date.now();
    await upsertProfiles(database(), tenantId, [{ user: 2, attributes: { plan: 'free' } }]);
    const firstDue = profileSnapshotDueAt(database(), tenantId)!;
    expect(firstDue).toBeGreaterThanOrEqual(firstWrite + SNAPSHOT_QUIET_MS);
    const secondWrite = Date.now();
    await upsertProfiles(database(), tenantId, [{ user: 3, attributes: { plan: 'free' } }]);
    expect(profileSnapshotDueAt(database(), tenantId)).toBeGreaterThanOrEqual(Math.max(firstDue, secondWrite + SNAPSHOT_QUIET_MS));
    // Event-loop turns, no clock time: a snapshot due at once would be written by now.
    for (let turn = 0; turn < 20; turn++) await new Promise((resolve) => setImmediate(resolve));
    expect(await snapshotSeq()).toBe(saved);

    await saveProfileSnapshot(database(), tenantId);
    expect(await snapshotSeq()).toBe(saved + 2);
    expect(profileSnapshotDueAt(database(), tenantId)).toBeNull();
  });

  it('writes the owed snapshot when its app closes, and the next app loads it instead of the rows', async () => {
    const tenantId = await tenantRow(newId('tn'));
    const seqs = async () => ({
      seq: (await db().profileIndexState.findUnique({ where: { tenantId } }))!.seq,
      snapshotSeq: (await db().profileIndexSnapshot.findUnique({ where: { tenantId } }))?.seq,
    });
    const registered = app();
    // An app of its own over the same storage (its close leaves the storage open), closed within the quiet period.
    const closing = createApp({ storage: registered.storage });
    registerApp(closing);
    try {
      await upsertProfiles(closing.database, tenantId, [{ user: 1, attributes: { plan: 'pro' } }]);
      expect(profileSnapshotDueAt(closing.database, tenantId)).not.toBeNull();
      await closing.close();
      expect(profileIndexes(closing.database).byTenant.size).toBe(0);
    } finally {
      registerApp(registered);
    }
    const { seq, snapshotSeq } = await seqs();
    expect(Number(snapshotSeq)).toBe(Number(seq));
    await profileIndex(database(), tenantId);
    expect(profileIndexLoad(database(), tenantId)?.source).toBe('snapshot');
  });

  // On PostgreSQL the snapshot table is UNLOGGED: an unclean stop of the database empties it, and so does promoting a
  // standby (unlogged tables are not replicated). Every write is in the Profile rows, so the index comes back whole.
  it('rebuilds from the rows when the snapshot is gone, and snapshots again', async () => {
    const tenantId = await tenantRow(newId('tn'));
    await upsertProfiles(database(), tenantId, [
      { user: 1, attributes: { plan: 'pro' } },
      { user: 2, attributes: { plan: 'free' } },
    ]);
    await saveProfileSnapshot(database(), tenantId);
    await db().profileIndexSnapshot.deleteMany({ where: { tenantId } });
    dropProfileIndex(database(), tenantId);
    expect(await indexedProfiles(tenantId)).toEqual(await storedProfiles(tenantId));
    expect(profileIndexLoad(database(), tenantId)?.source).toBe('rows');
    expect((await profileIndex(database(), tenantId)).equals('plan', 'pro').toArray()).toEqual([1]);
    dropProfileIndex(database(), tenantId);
    await profileIndex(database(), tenantId);
    expect(profileIndexLoad(database(), tenantId)?.source).toBe('snapshot');
  });

  it.runIf(testProvider === 'postgres')('keeps the snapshot out of the WAL: its table is unlogged on PostgreSQL', async () => {
    const rows = await db().$queryRawUnsafe<{ persistence: string }[]>(
      `SELECT "relpersistence"::text AS "persistence" FROM pg_class WHERE "oid" = $1::regclass`,
      database().dialect.table('ProfileIndexSnapshot'),
    );
    expect(rows[0].persistence).toBe('u');
  });

  it('rebuilds from rows written before the index had a state row', async () => {
    const tenantId = await tenantRow(newId('tn'));
    await db().profile.createMany({ data: [1, 2].map((user) => ({ tenantId, user: BigInt(user), attributes: JSON.stringify({ n: user }) })) });
    expect(await indexedProfiles(tenantId)).toEqual({ 1: { n: 1 }, 2: { n: 2 } });
    expect(profileIndexLoad(database(), tenantId)?.source).toBe('rows');
    dropProfileIndex(database(), tenantId);
    await profileIndex(database(), tenantId);
    expect(profileIndexLoad(database(), tenantId)?.source).toBe('snapshot');
  });

  // After a bulk write PostgreSQL's statistics lag until autovacuum comes by, and the rebuild's keyset pages were then
  // planned as a sort of every remaining row (4 s per page of a 10M-row table). `analyze_count` counts explicit
  // ANALYZEs only (autovacuum's are `autoanalyze_count`).
  it.runIf(database().dialect.refreshPlannerStatistics('Profile') !== null)('refreshes the planner statistics of the rows before it rebuilds', async () => {
    const analyses = async () => {
      const rows = await db().$queryRawUnsafe<{ n: number }[]>(
        `SELECT "analyze_count"::int AS "n" FROM pg_stat_user_tables WHERE "relid" = $1::regclass`,
        database().dialect.table('Profile'),
      );
      return rows[0]?.n ?? 0;
    };
    const before = await analyses();
    const tenantId = await tenantRow(newId('tn'));
    await db().profile.createMany({ data: [1, 2, 3].map((user) => ({ tenantId, user: BigInt(user), attributes: '{}' })) });
    await profileIndex(database(), tenantId);
    expect(profileIndexLoad(database(), tenantId)?.source).toBe('rows');
    expect(await analyses()).toBeGreaterThan(before);
  });
});

describe('tenant delete', () => {
  it('drops the profile rows, the index state, its snapshot and the index in memory', async () => {
    const view = await createTenant(database(), { name: `prof-${Date.now()}`, partitions: 2 });
    await upsertProfiles(database(), view.id, [{ user: 9, attributes: { plan: 'pro' } }]);
    expect((await profileIndex(database(), view.id)).equals('plan', 'pro').toArray()).toEqual([9]);
    await saveProfileSnapshot(database(), view.id);
    expect(await db().profileIndexSnapshot.count({ where: { tenantId: view.id } })).toBe(1);
    await deleteTenant(database(), { ...view, createdAt: new Date(view.createdAt) } as Parameters<typeof deleteTenant>[1]);
    expect(await db().profileIndexState.count({ where: { tenantId: view.id } })).toBe(0);
    expect(await db().profileIndexSnapshot.count({ where: { tenantId: view.id } })).toBe(0);
    expect((await profileIndex(database(), view.id)).size).toBe(0);
  });
});
