// The engine's storage, after BullMQ's model: read the partition log after an offset, commit a batch (journal rows +
// new offset + checkpoints) in ONE transaction fenced by the partition lease epoch, leases with expiry and takeover.
// Hot paths are raw SQL through Prisma (multi-row INSERTs); identifiers are quoted so both providers accept them.
import { db, dbTarget, type Tx } from '../storage/db';
import type { LoggedEvent } from './types';

/** A move to journal: a single user or a bulk bitmap (portable roaring bytes). */
export interface JournalMove {
  instanceId: string;
  partition: number;
  fromStep: string | null;
  toStep: string;
  user: number | null;
  bitmap: Uint8Array | null;
  count: number;
  leaveAction: string | null;
  enterAction: string | null;
  timeMs: number;
}

export interface StoredJournalRow extends JournalMove {
  seq: number;
}

export interface CheckpointWrite {
  instanceId: string;
  partition: number;
  data: Uint8Array;
}

export interface Lease {
  tenantId: string;
  partition: number;
  owner: string;
  epoch: number;
}

/** The partition's lease was taken over (or expired and was taken): this process must stop writing for it. */
export class LeaseLostError extends Error {
  constructor(lease: Lease) {
    super(`Lease of partition ${lease.partition} of tenant ${lease.tenantId} (epoch ${lease.epoch}) is no longer held by ${lease.owner}`);
    this.name = 'LeaseLostError';
  }
}

const JOURNAL_COLUMNS = ['seq', 'tenantId', 'instanceId', 'partition', 'fromStep', 'toStep', 'user', 'bitmap', 'count', 'leaveAction', 'enterAction', 'timeMs'];
/** Rows per INSERT statement: 12 parameters each stays under SQLite's 32,766 and PostgreSQL's 65,535 limits. */
const JOURNAL_ROWS_PER_INSERT = 2_000;

export function table(name: string): string {
  const target = dbTarget();
  return target.provider === 'postgres' ? `"${target.schema.replace(/"/g, '""')}"."${name}"` : `"${name}"`;
}

const isPostgres = () => dbTarget().provider === 'postgres';

/** Builds placeholders for one statement: `$n` on PostgreSQL, `?` on SQLite. */
function binder() {
  const params: unknown[] = [];
  const postgres = isPostgres();
  return { params, bind: (value: unknown) => (params.push(value), postgres ? `$${params.length}` : '?') };
}

const num = (value: unknown): number => (value === null || value === undefined ? 0 : Number(value));

export interface LogRow {
  offset: number;
  events: LoggedEvent[];
}

/** Up to `limit` log rows of one partition after `offset`, in offset order. */
export async function readLog(tenantId: string, partition: number, offset: number, limit: number): Promise<LogRow[]> {
  const { params, bind } = binder();
  const sql = `SELECT "offset", "events" FROM ${table('EventLog')} WHERE "tenantId" = ${bind(tenantId)} AND "partition" = ${bind(partition)} AND "offset" > ${bind(offset)} ORDER BY "offset" LIMIT ${bind(limit)}`;
  const rows = await db().$queryRawUnsafe<{ offset: unknown; events: string }[]>(sql, ...params);
  return rows.map((row) => ({ offset: num(row.offset), events: JSON.parse(row.events) as LoggedEvent[] }));
}

/** The last offset ingest wrote for each partition of the tenant. */
export async function logEnds(tenantId: string): Promise<Map<number, number>> {
  const { params, bind } = binder();
  const rows = await db().$queryRawUnsafe<{ partition: unknown; last: unknown }[]>(
    `SELECT "partition", MAX("offset") AS "last" FROM ${table('EventLog')} WHERE "tenantId" = ${bind(tenantId)} GROUP BY "partition"`,
    ...params,
  );
  return new Map(rows.map((row) => [num(row.partition), num(row.last)]));
}

/**
 * Takes the partition's lease when it is free, expired or already ours (a restart under the same owner name),
 * bumping the fencing epoch. Returns the lease and the applied offset, or null when another owner holds it.
 */
export async function acquireLease(tenantId: string, partition: number, owner: string, now: number, leaseMs: number): Promise<{ lease: Lease; offset: number } | null> {
  const insert = binder();
  await db().$executeRawUnsafe(
    `INSERT INTO ${table('PartitionState')} ("tenantId", "partition", "offset", "epoch", "leaseUntilMs") VALUES (${insert.bind(tenantId)}, ${insert.bind(partition)}, 0, 0, 0) ON CONFLICT DO NOTHING`,
    ...insert.params,
  );
  const update = binder();
  const taken = await db().$executeRawUnsafe(
    `UPDATE ${table('PartitionState')} SET "owner" = ${update.bind(owner)}, "epoch" = "epoch" + 1, "leaseUntilMs" = ${update.bind(now + leaseMs)}
     WHERE "tenantId" = ${update.bind(tenantId)} AND "partition" = ${update.bind(partition)}
       AND ("owner" IS NULL OR "owner" = ${update.bind(owner)} OR "leaseUntilMs" < ${update.bind(now)})`,
    ...update.params,
  );
  if (taken !== 1) return null;
  const state = await db().partitionState.findUniqueOrThrow({ where: { tenantId_partition: { tenantId, partition } } });
  return { lease: { tenantId, partition, owner, epoch: state.epoch }, offset: Number(state.offset) };
}

/** Extends a held lease; false when it was lost. */
export async function renewLease(lease: Lease, now: number, leaseMs: number): Promise<boolean> {
  const { params, bind } = binder();
  const renewed = await db().$executeRawUnsafe(
    `UPDATE ${table('PartitionState')} SET "leaseUntilMs" = ${bind(now + leaseMs)} WHERE "tenantId" = ${bind(lease.tenantId)} AND "partition" = ${bind(lease.partition)} AND "owner" = ${bind(lease.owner)} AND "epoch" = ${bind(lease.epoch)}`,
    ...params,
  );
  return renewed === 1;
}

export async function releaseLease(lease: Lease): Promise<void> {
  const { params, bind } = binder();
  await db().$executeRawUnsafe(
    `UPDATE ${table('PartitionState')} SET "owner" = NULL, "leaseUntilMs" = 0 WHERE "tenantId" = ${bind(lease.tenantId)} AND "partition" = ${bind(lease.partition)} AND "owner" = ${bind(lease.owner)} AND "epoch" = ${bind(lease.epoch)}`,
    ...params,
  );
}

/** Fails the transaction unless the lease is still ours; optionally moves the offset forward from `fromOffset`. */
async function fence(tx: Tx, lease: Lease, offsets?: { from: number; to: number }): Promise<void> {
  const { params, bind } = binder();
  const set = offsets ? `"offset" = ${bind(offsets.to)}` : `"epoch" = "epoch"`;
  const where = `"tenantId" = ${bind(lease.tenantId)} AND "partition" = ${bind(lease.partition)} AND "owner" = ${bind(lease.owner)} AND "epoch" = ${bind(lease.epoch)}`;
  const guard = offsets ? ` AND "offset" = ${bind(offsets.from)}` : '';
  const updated = await tx.$executeRawUnsafe(`UPDATE ${table('PartitionState')} SET ${set} WHERE ${where}${guard}`, ...params);
  if (updated !== 1) throw new LeaseLostError(lease);
}

/**
 * Journal seqs are handed out inside the writing transaction. On PostgreSQL a transaction-scoped advisory lock
 * serializes journal writers so seq order is commit order (a reader after cursor N never misses a later-committing
 * smaller seq); SQLite has one writer at a time anyway.
 */
async function nextSeq(tx: Tx): Promise<number> {
  if (isPostgres()) await tx.$executeRawUnsafe(`SELECT pg_advisory_xact_lock(7300400001)`);
  const rows = await tx.$queryRawUnsafe<{ last: unknown }[]>(`SELECT MAX("seq") AS "last" FROM ${table('Journal')}`);
  return num(rows[0]?.last) + 1;
}

async function insertJournal(tx: Tx, tenantId: string, moves: JournalMove[], firstSeq: number): Promise<void> {
  for (let start = 0; start < moves.length; start += JOURNAL_ROWS_PER_INSERT) {
    const { params, bind } = binder();
    const values: string[] = [];
    const end = Math.min(moves.length, start + JOURNAL_ROWS_PER_INSERT);
    for (let i = start; i < end; i++) {
      const m = moves[i];
      const row = [firstSeq + i, tenantId, m.instanceId, m.partition, m.fromStep, m.toStep, m.user, m.bitmap, m.count, m.leaveAction, m.enterAction, m.timeMs];
      values.push(`(${row.map(bind).join(', ')})`);
    }
    const columns = JOURNAL_COLUMNS.map((c) => `"${c}"`).join(', ');
    await tx.$executeRawUnsafe(`INSERT INTO ${table('Journal')} (${columns}) VALUES ${values.join(', ')}`, ...params);
  }
}

async function writeCheckpoints(tx: Tx, checkpoints: CheckpointWrite[], journalSeq: number, now: number): Promise<void> {
  for (const cp of checkpoints) {
    const data = Buffer.from(cp.data.buffer, cp.data.byteOffset, cp.data.byteLength) as unknown as Uint8Array<ArrayBuffer>;
    const row = { journalSeq: BigInt(journalSeq), data, updatedAt: new Date(now) };
    await tx.shardCheckpoint.upsert({
      where: { instanceId_partition: { instanceId: cp.instanceId, partition: cp.partition } },
      create: { instanceId: cp.instanceId, partition: cp.partition, ...row },
      update: row,
    });
  }
}

export interface BatchCommit {
  /** Every partition whose lease fences this commit; `offsets` moves the first one's offset. */
  leases: Lease[];
  offsets?: { from: number; to: number };
  moves: JournalMove[];
  /** Written with journalSeq = the last seq of this commit, so they include its moves. */
  checkpoints?: CheckpointWrite[];
  now: number;
  /** More writes in the same transaction (instance rows, snapshots). */
  also?: (tx: Tx) => Promise<void>;
}

/** Commits journal rows, the new offset and checkpoints atomically. Returns the last journal seq (or the current max). */
export async function commitBatch(tenantId: string, commit: BatchCommit): Promise<number> {
  return db().$transaction(
    async (tx) => {
      for (const [i, lease] of commit.leases.entries()) await fence(tx, lease, i === 0 ? commit.offsets : undefined);
      const first = await nextSeq(tx);
      await insertJournal(tx, tenantId, commit.moves, first);
      const last = first + commit.moves.length - 1;
      if (commit.checkpoints?.length) await writeCheckpoints(tx, commit.checkpoints, last, commit.now);
      await commit.also?.(tx);
      return last;
    },
    { timeout: 300_000, maxWait: 300_000 },
  );
}

export async function loadCheckpoint(instanceId: string, partition: number): Promise<{ journalSeq: number; data: Uint8Array } | null> {
  const row = await db().shardCheckpoint.findUnique({ where: { instanceId_partition: { instanceId, partition } } });
  return row ? { journalSeq: Number(row.journalSeq), data: row.data } : null;
}

/** Journal rows of one shard after `seq`, in seq order, in pages (recovery replays them onto the checkpoint). */
export async function* journalAfter(instanceId: string, partition: number, seq: number, pageSize = 20_000): AsyncGenerator<StoredJournalRow[]> {
  for (let after = seq; ; ) {
    const { params, bind } = binder();
    const rows = await db().$queryRawUnsafe<Record<string, unknown>[]>(
      `SELECT "seq", "fromStep", "toStep", "user", "bitmap", "count", "leaveAction", "enterAction", "timeMs" FROM ${table('Journal')}
       WHERE "instanceId" = ${bind(instanceId)} AND "partition" = ${bind(partition)} AND "seq" > ${bind(after)} ORDER BY "seq" LIMIT ${bind(pageSize)}`,
      ...params,
    );
    if (rows.length === 0) return;
    yield rows.map((r) => ({
      seq: num(r.seq),
      instanceId,
      partition,
      fromStep: (r.fromStep as string | null) ?? null,
      toStep: r.toStep as string,
      user: r.user === null ? null : num(r.user),
      bitmap: (r.bitmap as Uint8Array | null) ?? null,
      count: num(r.count),
      leaveAction: (r.leaveAction as string | null) ?? null,
      enterAction: (r.enterAction as string | null) ?? null,
      timeMs: num(r.timeMs),
    }));
    after = num(rows[rows.length - 1].seq);
    if (rows.length < pageSize) return;
  }
}
