import { describe, expect, it } from 'vitest';
import { newId } from '../../server/ids';
import { writeCountsSamples } from '../../server/storage/counts-samples';
import { db, database } from '../helpers/app-db';
import { deadLetterRow, deadLetterRows, deleteDeadLetter, type DeadLetterWrite } from '../../server/storage/dead-letters';
import { appendLogRows } from '../../server/storage/event-log-append';
import { logEnds, logRowsAfter, newestLogRows } from '../../server/storage/event-log';
import { expireIngestRecords, ingestRecordsAfter } from '../../server/storage/ingest-records';
import { commitBatch } from '../../server/storage/journal/commit';
import { crowdChangeCounts, crowdChangeRows } from '../../server/storage/journal/crowd-changes';
import { acquireLease, LeaseLostError, type Lease } from '../../server/storage/journal/leases';
import { bulkMovesBefore, movesNamingUser } from '../../server/storage/journal/user-moves';

// The contract of the storage operations the engine builds on (server/storage/journal/, event-log.ts,
// dead-letters.ts, ingest-records.ts, counts-samples.ts), the same on SQLite and PostgreSQL (each provider's project
// runs this file). The engine's own tests exercise them further through the engine.

const LEASE_MS = 15_000;

async function tenantWithLease(): Promise<{ tenantId: string; lease: Lease }> {
  const tenantId = newId('tn');
  await db().tenant.create({ data: { id: tenantId, name: tenantId.toLowerCase(), partitions: 1 } });
  const taken = await acquireLease(database(), tenantId, 0, 'owner', Date.now(), LEASE_MS);
  if (!taken) throw new Error('partition 0 was not taken');
  return { tenantId, lease: taken.lease };
}

const letter = (id: string, reason: string): DeadLetterWrite => ({
  id,
  instanceId: 'in_1',
  step: 'a',
  partition: 0,
  logOffset: 1,
  eventIndex: 0,
  event: '{"user":1,"type":"x","data":{},"time":0}',
  reason,
});

describe('the engine storage operations', () => {
  it('event log: rows after an offset in order, the newest first, and each partition end', async () => {
    const { tenantId } = await tenantWithLease();
    const bytes = (n: number) => Buffer.from([n]);
    await appendLogRows(
      database(),
      tenantId,
      [1, 2, 3].map((n) => ({ partition: 0, count: 1, bytes: bytes(n) })),
      [],
    );
    const after = await logRowsAfter(database(), tenantId, 0, 1, 10);
    expect(after.map((row) => [row.offset, [...row.events]])).toEqual([
      [2, [2]],
      [3, [3]],
    ]);
    const newest = await newestLogRows(database(), tenantId, 0, 2);
    expect(newest.map((row) => [...Buffer.from(row.events as Uint8Array)])).toEqual([[3], [2]]);
    expect(Number.isFinite(newest[0].createdAtMs)).toBe(true);
    expect(await logEnds(database(), tenantId)).toEqual(new Map([[0, 3]]));
  });

  it('fenced commit: dead letters, the start and crowd changes commit with it, and nothing of a stale lease', async () => {
    const { tenantId, lease } = await tenantWithLease();
    const instanceId = newId('in');
    await db().instance.create({ data: { id: instanceId, tenantId, workflowId: 'wf', version: 1, crowdName: 'c', state: 'starting', userCount: 0n } });
    await commitBatch(database(), tenantId, {
      leases: [lease],
      moves: [],
      now: 1_000,
      deadLetters: [letter('dl_0001', 'first'), letter('dl_0002', 'second')],
      started: { instanceId, userCount: 7, excludedCount: 1 },
      crowdChanges: [{ instanceId, partition: 0, timeMs: 500, data: Buffer.from([1, 2]) }],
    });
    const instance = await db().instance.findUniqueOrThrow({ where: { id: instanceId } });
    expect([instance.state, instance.userCount, instance.excludedCount, instance.startedAt?.getTime()]).toEqual(['running', 7n, 1n, 1_000]);
    const changes = await crowdChangeRows(database(), tenantId, instanceId, [0], 0, 1_000);
    expect(changes.map((row) => [row.partition, row.timeMs, [...row.data]])).toEqual([[0, 500, [1, 2]]]);
    expect(await crowdChangeRows(database(), tenantId, instanceId, [0], 500, 1_000)).toEqual([]);
    expect(await crowdChangeCounts(database(), tenantId, instanceId)).toEqual(new Map([[0, { count: 1, firstMs: 500 }]]));

    const stale = { ...lease, epoch: lease.epoch - 1 };
    await expect(
      commitBatch(database(), tenantId, { leases: [stale], moves: [], now: 2_000, deadLetters: [letter('dl_0003', 'lost')] }),
    ).rejects.toBeInstanceOf(LeaseLostError);
    const [first, ...rest] = await deadLetterRows(database(), tenantId, 1);
    expect([first.id, first.reason, rest]).toEqual(['dl_0001', 'first', []]);
    expect((await deadLetterRows(database(), tenantId, 5, 'dl_0001')).map((row) => row.id)).toEqual(['dl_0002']);
    expect((await deadLetterRow(database(), tenantId, 'dl_0002'))?.reason).toBe('second');
    expect(await deleteDeadLetter(database(), tenantId, 'dl_0002')).toBe(true);
    expect(await deleteDeadLetter(database(), tenantId, 'dl_0002')).toBe(false);
    expect(await deadLetterRow(database(), 'tn_other', 'dl_0001')).toBeUndefined();
  });

  it('where-is-user reads: moves naming the user, and a partition bulk rows newest first', async () => {
    const { tenantId } = await tenantWithLease();
    const row = (seq: number, user: number | null, to: string) => ({
      seq: BigInt(seq),
      tenantId,
      instanceId: 'in_1',
      partition: 0,
      toStep: to,
      user: user === null ? null : BigInt(user),
      bitmap: user === null ? new Uint8Array([seq]) : null,
      count: 1n,
      timeMs: BigInt(seq * 10),
    });
    await db().journal.createMany({ data: [row(1, 5, 'a'), row(2, null, 'b'), row(3, 6, 'c'), row(4, 5, 'd'), row(5, null, 'e'), row(6, null, 'f')] });
    expect((await movesNamingUser(database(), tenantId, 5, 10)).map((move) => [move.seq, move.toStep, move.timeMs])).toEqual([
      [4, 'd', 40],
      [1, 'a', 10],
    ]);
    const bulk = await bulkMovesBefore(database(), tenantId, 0, 6, 1, 10);
    expect(bulk.map((move) => [move.seq, move.toStep, [...move.bitmap]])).toEqual([
      [5, 'e', [5]],
      [2, 'b', [2]],
    ]);
  });

  it('ingest records: read after a seq in order; expiry keeps the newest, without its key and ids', async () => {
    const { tenantId } = await tenantWithLease();
    const record = (seq: number, createdAtMs: number) => ({
      seq,
      key: `k${seq}`,
      requestHash: 'h',
      eventHashes: new Uint8Array(16).fill(seq),
      createdAtMs,
      accepted: 1,
      duplicates: 0,
    });
    await appendLogRows(database(), tenantId, [], [record(1, 100), record(2, 200), record(3, 300)]);
    expect((await ingestRecordsAfter(database(), tenantId, 1)).map((r) => [r.seq, r.key, r.createdAtMs, [...r.eventHashes!]])).toEqual([
      [2, 'k2', 200, Array(16).fill(2)],
      [3, 'k3', 300, Array(16).fill(3)],
    ]);
    await expireIngestRecords(database(), tenantId, 1_000, 3);
    expect(await ingestRecordsAfter(database(), tenantId, 0)).toEqual([{ ...record(3, 300), key: null, eventHashes: null, eventIds: null }]);
  });

  it('counts samples: one per instance, resolution and bucket, a later write replacing it', async () => {
    const { tenantId } = await tenantWithLease();
    await db().instance.create({ data: { id: 'in_s', tenantId, workflowId: 'wf', version: 1, crowdName: 'c', state: 'running', userCount: 0n } });
    await writeCountsSamples(database(), [
      { tenantId, instanceId: 'in_s', resolution: 60_000, at: 0, counts: '{"total":1}' },
      { tenantId, instanceId: 'in_s', resolution: 60_000, at: 60_000, counts: '{"total":2}' },
    ]);
    await writeCountsSamples(database(), [{ tenantId, instanceId: 'in_s', resolution: 60_000, at: 0, counts: '{"total":3}' }]);
    await writeCountsSamples(database(), []);
    const rows = await db().countsSample.findMany({ where: { instanceId: 'in_s' }, orderBy: { at: 'asc' } });
    expect(rows.map((row) => [Number(row.at), row.counts])).toEqual([
      [0, '{"total":3}'],
      [60_000, '{"total":2}'],
    ]);
  });
});
