import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../server/clock';
import { applyJournalRetention } from '../../server/engine/journal-retention';
import { deserializeBitmap, RoaringBitmap32, serializeBitmap } from '../../server/crowd/bitmap';
import {
  commitConsumer,
  createConsumer,
  DEFAULT_RETENTION_MS,
  getConsumer,
  INLINE_USERS_MAX,
  INLINE_USERS_PER_PAGE,
  MAX_PAGE_BITMAP_BYTES,
  readNotifications,
} from '../../server/notifications/notifications';
import { newId } from '../../server/ids';
import { db, database } from '../helpers/app-db';
import { createTenant, deleteTenant } from '../../server/tenants/tenants';
import { updateTenantLimits } from '../../server/limits/limits';
import { seqsFollowTheNewestRow } from '../../server/storage/journal/max-seq';

const DAY = 24 * 60 * 60 * 1000;
let nextSeq = 1;

async function tenant(): Promise<string> {
  const id = newId('tn');
  await db().tenant.create({ data: { id, name: id.toLowerCase().replace(/[^a-z0-9]/g, 'x'), partitions: 2 } });
  return id;
}

/** Journal rows as the engine core writes them; seqs are global across tenants, like the engine's. */
async function move(
  tenantId: string,
  move: { users?: number[]; user?: number; from?: string | null; to?: string; timeMs?: number; instanceId?: string; partition?: number },
) {
  const seq = nextSeq++;
  const bitmap = move.users ? serializeBitmap(new RoaringBitmap32(move.users)) : null;
  await db().journal.create({
    data: {
      seq: BigInt(seq),
      tenantId,
      instanceId: move.instanceId ?? 'in_1',
      partition: move.partition ?? 0,
      fromStep: move.from === undefined ? 'a' : move.from,
      toStep: move.to ?? 'b',
      user: move.user === undefined ? null : BigInt(move.user),
      bitmap,
      count: BigInt(move.users ? move.users.length : 1),
      leaveAction: 'left-a',
      enterAction: 'entered-b',
      timeMs: BigInt(move.timeMs ?? Date.UTC(2026, 0, 1)),
    },
  });
  return seq;
}

describe('reading notifications', () => {
  it('pages through one tenant in seq order with a next cursor, never showing another tenant', async () => {
    const [t, other] = [await tenant(), await tenant()];
    const seqs: number[] = [];
    for (let user = 0; user < 7; user++) {
      seqs.push(await move(t, { user }));
      await move(other, { user: 100 + user });
    }
    const first = await readNotifications(database(), t, 0, 3);
    expect(first.items.map((i) => i.user)).toEqual([0, 1, 2]);
    expect(first.next).toBe(seqs[2]);
    const second = await readNotifications(database(), t, first.next, 3);
    expect(second.items.map((i) => i.user)).toEqual([3, 4, 5]);
    const third = await readNotifications(database(), t, second.next, 3);
    expect(third.items.map((i) => i.user)).toEqual([6]);
    const empty = await readNotifications(database(), t, third.next, 3);
    expect(empty).toEqual({ items: [], next: third.next });
    expect(first.items[0]).toEqual({
      seq: seqs[0],
      instanceId: 'in_1',
      from: 'a',
      to: 'b',
      user: 0,
      count: 1,
      leaveAction: 'left-a',
      enterAction: 'entered-b',
      time: '2026-01-01T00:00:00.000Z',
    });
  });

  it('lists the users of a small bulk move and carries a large one as a portable roaring bitmap', async () => {
    const t = await tenant();
    await move(t, { users: [5, 1, 9], from: null, to: 'entry' });
    const large = Array.from({ length: INLINE_USERS_MAX + 1 }, (_, i) => i * 3);
    await move(t, { users: large });
    const { items } = await readNotifications(database(), t, 0, 10);
    expect(items[0]).toMatchObject({ from: null, to: 'entry', users: [1, 5, 9], count: 3 });
    expect(items[0].bitmap).toBeUndefined();
    expect(items[1].users).toBeUndefined();
    expect(items[1].count).toBe(large.length);
    expect(Array.from(deserializeBitmap(Buffer.from(items[1].bitmap!, 'base64')).toUint32Array())).toEqual(large);
  });

  it('lists at most INLINE_USERS_PER_PAGE IDs in one page; later bulk moves of the page carry bitmaps', async () => {
    const t = await tenant();
    const perMove = INLINE_USERS_MAX;
    const moves = INLINE_USERS_PER_PAGE / perMove + 1;
    for (let m = 0; m < moves; m++) await move(t, { users: Array.from({ length: perMove }, (_, i) => m * perMove + i) });
    const { items } = await readNotifications(database(), t, 0, moves);
    expect(items.filter((i) => i.users).length).toBe(moves - 1);
    expect(items[moves - 1].users).toBeUndefined();
    expect(deserializeBitmap(Buffer.from(items[moves - 1].bitmap!, 'base64')).size).toBe(perMove);
    const nextPage = await readNotifications(database(), t, items[moves - 2].seq, 10);
    expect(nextPage.items[0].users).toHaveLength(perMove);
  });
});

describe('bulk moves in pages', () => {
  it('merges the per-partition entries of one bulk move into one item, and nothing else', async () => {
    const t = await tenant();
    const at = Date.UTC(2026, 2, 1);
    const s1 = await move(t, { users: [0, 2, 4], from: null, to: 'entry', partition: 0, timeMs: at });
    const s2 = await move(t, { users: [1, 3, 5], from: null, to: 'entry', partition: 1, timeMs: at });
    const again = await move(t, { users: [6], from: null, to: 'entry', partition: 0, timeMs: at }); // a partition already merged: a move of its own
    const later = await move(t, { users: [7], from: null, to: 'entry', partition: 1, timeMs: at + 1 }); // another time: another move
    const { items } = await readNotifications(database(), t, 0, 100);
    expect(items.map((i) => [i.seq, i.seqs, i.users, i.count])).toEqual([
      [s1, [s1, s2], [0, 1, 2, 3, 4, 5], 6],
      [again, undefined, [6], 1],
      [later, undefined, [7], 1],
    ]);
    // A page boundary splits a move: the rest comes as its own item on the next page.
    expect((await readNotifications(database(), t, 0, 1)).items[0]).toMatchObject({ seq: s1, users: [0, 2, 4], count: 3 });
    expect((await readNotifications(database(), t, s1, 1)).items[0]).toMatchObject({ seq: s2, users: [1, 3, 5] });
  });

  it('carries a merged large move as one compact bitmap', async () => {
    const t = await tenant();
    const partitions = 4;
    const users = 200_000;
    for (let p = 0; p < partitions; p++) await move(t, { users: Array.from({ length: users / partitions }, (_, i) => i * partitions + p), partition: p });
    const { items } = await readNotifications(database(), t, 0, 100);
    expect(items).toHaveLength(1);
    const bytes = Buffer.from(items[0].bitmap!, 'base64');
    expect(deserializeBitmap(bytes).size).toBe(users);
    // 0 … 199,999 as runs: a few dozen bytes, where the four partition bitmaps took 8 KB per 65,536 IDs each.
    expect(bytes.byteLength).toBeLessThan(100);
  });

  it(`bounds a page by ${MAX_PAGE_BITMAP_BYTES / 1024 / 1024} MiB of bitmaps as well as by limit`, async () => {
    const t = await tenant();
    // Every other ID of 64 chunks of 65,536: 64 bitmap containers of 8 KB, 0.5 MB per move (nothing to run-compress).
    const half = Array.from({ length: 64 * 32_768 }, (_, i) => i * 2);
    const seqs: number[] = [];
    for (let m = 0; m < 10; m++) seqs.push(await move(t, { users: half, to: `s${m}` }));
    const first = await readNotifications(database(), t, 0, 100);
    const perPage = Math.floor(MAX_PAGE_BITMAP_BYTES / serializeBitmap(new RoaringBitmap32(half)).byteLength);
    expect(first.items.map((i) => i.seq)).toEqual(seqs.slice(0, perPage));
    expect(first.next).toBe(seqs[perPage - 1]);
    const second = await readNotifications(database(), t, first.next, 100);
    expect(second.items.map((i) => i.seq)).toEqual(seqs.slice(perPage));
  });
});

describe('consumers', () => {
  it('starts at the tail, the head or a given cursor, and reports its lag', async () => {
    const t = await tenant();
    const [s1, s2, s3] = [await move(t, { user: 1 }), await move(t, { user: 2 }), await move(t, { user: 3 })];
    const tail = await createConsumer(database(), t, 'tail', 'tail');
    expect(tail).toMatchObject({ created: true, consumer: { name: 'tail', cursor: s3, lag: 0 } });
    expect((await createConsumer(database(), t, 'head', 'head')).consumer).toMatchObject({ cursor: 0, lag: 3 });
    expect((await createConsumer(database(), t, 'mid', s1)).consumer).toMatchObject({ cursor: s1, lag: 2 });
    await expect(createConsumer(database(), t, 'future', s3 + 1000)).rejects.toMatchObject({ code: 'bad_request', message: /ahead of the newest/ });
    const s4 = await move(t, { user: 4 });
    expect(await getConsumer(database(), t, 'tail')).toMatchObject({ cursor: s3, lag: 1 });
    expect((await readNotifications(database(), t, (await getConsumer(database(), t, 'tail')).cursor, 100)).items.map((i) => i.seq)).toEqual([s4]);
    // Re-creating an existing consumer keeps its position.
    expect(await createConsumer(database(), t, 'mid', 'tail')).toMatchObject({ created: false, consumer: { cursor: s1 } });
    expect(s2).toBeGreaterThan(s1);
  });

  it('commits move forward only: the same cursor again is fine, a lower one is a 409 naming both', async () => {
    const t = await tenant();
    const [s1, s2] = [await move(t, { user: 1 }), await move(t, { user: 2 })];
    await createConsumer(database(), t, 'c', 'head');
    expect(await commitConsumer(database(), t, 'c', s2, Date.now())).toMatchObject({ cursor: s2, lag: 0 });
    expect(await commitConsumer(database(), t, 'c', s2, Date.now())).toMatchObject({ cursor: s2 });
    const refused = commitConsumer(database(), t, 'c', s1, Date.now());
    await expect(refused).rejects.toMatchObject({ code: 'conflict', details: { cursor: s1, committed: s2 } });
    await expect(commitConsumer(database(), t, 'c', s1, Date.now())).rejects.toThrow(new RegExp(`cursor ${s1} is behind .* ${s2}`));
    await expect(commitConsumer(database(), t, 'c', s2 + 1000, Date.now())).rejects.toMatchObject({ code: 'bad_request' });
    await expect(commitConsumer(database(), t, 'missing', s1, Date.now())).rejects.toMatchObject({ code: 'not_found' });
    expect((await getConsumer(database(), t, 'c')).cursor).toBe(s2);
  });

  it('keeps the highest cursor when commits race', async () => {
    const t = await tenant();
    const seqs = [];
    for (let user = 0; user < 10; user++) seqs.push(await move(t, { user }));
    await createConsumer(database(), t, 'racer', 'head');
    await Promise.allSettled(seqs.map((seq) => commitConsumer(database(), t, 'racer', seq, Date.now())));
    expect((await getConsumer(database(), t, 'racer')).cursor).toBe(seqs[9]);
  });
});

describe('journal cleanup', () => {
  it('deletes entries older than the retention even when a consumer has not read them, and tells that consumer what it lost', async () => {
    const clock = new ManualClock(Date.UTC(2026, 1, 1));
    const t = await tenant();
    const old = clock.now() - 8 * DAY;
    const s1 = await move(t, { user: 1, timeMs: old });
    const s2 = await move(t, { user: 2, timeMs: old });
    const recent = await move(t, { user: 3, timeMs: clock.now() - DAY });
    await createConsumer(database(), t, 'slow', 'head');
    await createConsumer(database(), t, 'fast', 'tail');
    expect((await getConsumer(database(), t, 'slow')).lost).toBeNull();
    expect(await applyJournalRetention(database(), clock)).toBeGreaterThanOrEqual(2);
    expect((await readNotifications(database(), t, 0, 100)).items.map((i) => i.seq)).toEqual([recent]);
    // `slow` had read nothing: it is told which moves it lost, on its view and on every page it reads from behind
    expect((await getConsumer(database(), t, 'slow')).lost).toEqual({ through: s2 });
    expect((await readNotifications(database(), t, 0, 100)).lost).toEqual({ through: s2 });
    expect((await readNotifications(database(), t, s1, 100)).lost).toEqual({ through: s2 });
    expect((await readNotifications(database(), t, s2, 100)).lost).toBeUndefined();
    expect((await getConsumer(database(), t, 'fast')).lost).toBeNull();
    await commitConsumer(database(), t, 'slow', recent, clock.now());
    expect((await getConsumer(database(), t, 'slow')).lost).toBeNull();
    const newest = await move(t, { user: 5, timeMs: clock.now() });
    await clock.advance(DEFAULT_RETENTION_MS);
    expect(await applyJournalRetention(database(), clock)).toBeGreaterThanOrEqual(1);
    expect((await readNotifications(database(), t, 0, 100)).items.map((i) => i.seq)).toEqual([newest]);
  });

  it("keeps at most the tenant's journalMaxRows newest entries", async () => {
    const clock = new ManualClock(Date.UTC(2026, 1, 1));
    const t = await tenant();
    await updateTenantLimits(database(), t, { journalMaxRows: 1_000 });
    const first = nextSeq;
    nextSeq += 1_200;
    const { params, bind } = database().dialect.parameters();
    await db().$executeRawUnsafe(
      `WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 1199)
       INSERT INTO ${database().dialect.table('Journal')} ("seq", "tenantId", "instanceId", "partition", "toStep", "user", "count", "timeMs")
       SELECT ${first} + i, ${bind(t)}, 'in_size', 0, 'b', i, 1, ${clock.now()} FROM n`,
      ...params,
    );
    expect(await applyJournalRetention(database(), clock)).toBeGreaterThanOrEqual(200);
    expect(await db().journal.count({ where: { tenantId: t } })).toBe(1_000);
    expect((await readNotifications(database(), t, 0, 1)).items[0].seq).toBe(first + 200);
    expect((await readNotifications(database(), t, 0, 1)).lost).toEqual({ through: first + 199 });
  });

  it("never deletes the journal's newest entry, so the next move never gets a seq a cursor has passed", async () => {
    const clock = new ManualClock(Date.UTC(2026, 1, 1));
    const t = await tenant();
    const newest = await move(t, { user: 1, timeMs: clock.now() - 30 * DAY });
    await createConsumer(database(), t, 'done', 'tail');
    await applyJournalRetention(database(), clock);
    const [row] = await db().journal.findMany({ orderBy: { seq: 'desc' }, take: 1 });
    expect(Number(row.seq)).toBe(newest); // old and read by every consumer, but the engine numbers after it
    const next = await move(t, { user: 2, timeMs: clock.now() });
    expect(await applyJournalRetention(database(), clock)).toBe(1);
    expect((await readNotifications(database(), t, 0, 100)).items.map((i) => i.seq)).toEqual([next]);
  });

  it('without consumers uses the retention alone, and keeps what a running instance needs to recover', async () => {
    const clock = new ManualClock(Date.UTC(2026, 1, 1));
    const t = await tenant();
    const old = clock.now() - 30 * DAY;
    const instanceId = newId('in');
    await db().instance.create({ data: { id: instanceId, tenantId: t, workflowId: 'wf', version: 1, crowdName: 'c', state: 'running', userCount: 3n } });
    await db().shardCheckpoint.create({ data: { tenantId: t, instanceId, partition: 0, journalSeq: 0n, data: Buffer.alloc(0) } });
    const beforeCheckpoint = await move(t, { user: 1, timeMs: old, instanceId, partition: 0 });
    const afterCheckpoint = await move(t, { user: 2, timeMs: old, instanceId, partition: 0 });
    const noCheckpoint = await move(t, { user: 3, timeMs: old, instanceId, partition: 1 });
    const stoppedInstance = await move(t, { user: 4, timeMs: old, instanceId: 'in_stopped' });
    const newest = await move(t, { user: 5, timeMs: clock.now() });
    await db().shardCheckpoint.update({
      where: { tenantId_instanceId_partition: { tenantId: t, instanceId, partition: 0 } },
      data: { journalSeq: BigInt(beforeCheckpoint) },
    });
    await applyJournalRetention(database(), clock);
    expect((await readNotifications(database(), t, 0, 100)).items.map((i) => i.seq)).toEqual([afterCheckpoint, noCheckpoint, newest]);
    expect(stoppedInstance).toBeGreaterThan(noCheckpoint);
  });

  it("deleting a tenant deletes its entries, but on SQLite keeps the journal's newest when it is the tenant's (seqs continue from it)", async () => {
    const other = await tenant();
    const otherSeq = await move(other, { user: 1 });
    const view = await createTenant(database(), { name: `gone-${nextSeq}`, partitions: 1 });
    const older = await move(view.id, { user: 2 });
    const newest = await move(view.id, { user: 3 });
    await deleteTenant(database(), { ...view, createdAt: new Date(view.createdAt) });
    const left = await db().journal.findMany({ where: { seq: { in: [BigInt(otherSeq), BigInt(older), BigInt(newest)] } }, orderBy: { seq: 'asc' } });
    if (seqsFollowTheNewestRow(database())) {
      expect(left.map((row) => Number(row.seq))).toEqual([otherSeq, newest]);
      expect(Number((await db().journal.aggregate({ _max: { seq: true } }))._max.seq)).toBe(newest);
    } else {
      // PostgreSQL's seqs come from a sequence: nothing of the tenant needs to stay.
      expect(left.map((row) => Number(row.seq))).toEqual([otherSeq]);
    }
  });

  it('deletes a large backlog in chunks until nothing old is left', async () => {
    const clock = new ManualClock(Date.UTC(2026, 1, 1));
    const t = await tenant();
    const first = nextSeq;
    const total = 10_005;
    nextSeq += total;
    // One statement: Prisma's createMany of 10,000 rows takes seconds on SQLite.
    const { params, bind } = database().dialect.parameters();
    await db().$executeRawUnsafe(
      `WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ${total - 1})
       INSERT INTO ${database().dialect.table('Journal')} ("seq", "tenantId", "instanceId", "partition", "toStep", "user", "count", "timeMs")
       SELECT ${first} + i, ${bind(t)}, 'in_backlog', 0, 'b', i, 1, ${clock.now() - 10 * DAY} FROM n`,
      ...params,
    );
    const kept = await move(t, { user: 1, timeMs: clock.now() });
    expect(await applyJournalRetention(database(), clock)).toBeGreaterThanOrEqual(total);
    expect((await readNotifications(database(), t, 0, 100)).items.map((i) => i.seq)).toEqual([kept]);
  });
});
