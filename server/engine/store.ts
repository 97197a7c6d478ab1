// The engine's storage, after BullMQ's model: read the partition log after an offset, commit a batch (journal rows +
// new offset + checkpoints) in ONE transaction fenced by the partition lease epoch, leases with expiry and takeover.
// These are the engine's hot paths, so they run on the raw driver (server/storage/raw.ts) with identifiers quoted for
// both providers; only a commit that also writes through Prisma (`also`, instance operations) is a Prisma transaction.
import { db, type Tx } from '../storage/db';
import { raw, type RawStatement } from '../storage/raw';
import { isDeadLocalOwner } from '../process-owner';
import { decodeEvents } from './log-codec';
import { takeRecent } from './recent-log';
import { dialect } from '../storage/dialect';
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


const num = (value: unknown): number => (value === null || value === undefined ? 0 : Number(value));

export interface LogRow {
  offset: number;
  events: LoggedEvent[];
}

/** Up to `limit` log rows of one partition after `offset`, in offset order (from memory when this process wrote them). */
export async function readLog(tenantId: string, partition: number, offset: number, limit: number): Promise<LogRow[]> {
  const recent = takeRecent(tenantId, partition, offset, limit);
  if (recent.length > 0) return recent;
  const { params, bind } = dialect().parameters();
  const sql = `SELECT "offset", "events" FROM ${dialect().table('EventLog')} WHERE "tenantId" = ${bind(tenantId)} AND "partition" = ${bind(partition)} AND "offset" > ${bind(offset)} ORDER BY "offset" LIMIT ${bind(limit)}`;
  const rows = await (await raw()).query<{ offset: unknown; events: Uint8Array }>(sql, params);
  return rows.map((row) => ({ offset: num(row.offset), events: decodeEvents(row.events) }));
}

/** The last offset ingest wrote for each partition of the tenant. */
export async function logEnds(tenantId: string): Promise<Map<number, number>> {
  const { params, bind } = dialect().parameters();
  const rows = await (await raw()).query<{ partition: unknown; last: unknown }>(
    `SELECT "partition", MAX("offset") AS "last" FROM ${dialect().table('EventLog')} WHERE "tenantId" = ${bind(tenantId)} GROUP BY "partition"`,
    params,
  );
  return new Map(rows.map((row) => [num(row.partition), num(row.last)]));
}

/** Rows deleted per statement when trimming the log, so no single statement holds the write lock for long. */
const TRIM_ROWS_PER_STATEMENT = 500;

/** Each partition's committed offset (what it has applied of the log). */
export async function appliedOffsets(tenantId: string): Promise<Map<number, number>> {
  const { params, bind } = dialect().parameters();
  const rows = await (await raw()).query<{ partition: unknown; offset: unknown }>(
    `SELECT "partition", "offset" FROM ${dialect().table('PartitionState')} WHERE "tenantId" = ${bind(tenantId)}`,
    params,
  );
  return new Map(rows.map((row) => [num(row.partition), num(row.offset)]));
}

/**
 * Deletes the tenant's log rows up to `upTo` (offsets per partition) that are also applied: a partition resumes after
 * its committed offset, so it never reads them again. The newest row of each partition stays, because ingest numbers
 * the next row from it. Returns the number of rows deleted.
 */
export async function trimLog(tenantId: string, upTo: Map<number, number>): Promise<number> {
  const rawDb = await raw();
  const read = dialect().parameters();
  const partitions = await rawDb.query<{ partition: unknown; first: unknown; last: unknown; applied: unknown }>(
    `SELECT e."partition", MIN(e."offset") AS "first", MAX(e."offset") AS "last", p."offset" AS "applied"
     FROM ${dialect().table('EventLog')} e JOIN ${dialect().table('PartitionState')} p ON p."tenantId" = e."tenantId" AND p."partition" = e."partition"
     WHERE e."tenantId" = ${read.bind(tenantId)} GROUP BY e."partition", p."offset"`,
    read.params,
  );
  let deleted = 0;
  for (const row of partitions) {
    const partition = num(row.partition);
    const end = Math.min((upTo.get(partition) ?? 0) + 1, num(row.applied) + 1, num(row.last)); // exclusive
    for (let from = num(row.first); from < end; from += TRIM_ROWS_PER_STATEMENT) {
      const { params, bind } = dialect().parameters();
      deleted += await rawDb.execute(
        `DELETE FROM ${dialect().table('EventLog')} WHERE "tenantId" = ${bind(tenantId)} AND "partition" = ${bind(partition)} AND "offset" >= ${bind(from)} AND "offset" < ${bind(Math.min(from + TRIM_ROWS_PER_STATEMENT, end))}`,
        params,
      );
    }
  }
  return deleted;
}

/**
 * Trims each tenant's log up to what its partitions had applied at the previous run, so applied rows stay for one
 * interval (the engine runs it hourly) for inspection, and a process that just started (after a crash, say) trims
 * nothing on its first run.
 */
export class LogTrimmer {
  private readonly marks = new Map<string, Map<number, number>>();

  async run(tenantId: string): Promise<number> {
    const applied = await appliedOffsets(tenantId);
    const previous = this.marks.get(tenantId);
    this.marks.set(tenantId, applied);
    return previous ? trimLog(tenantId, previous) : 0;
  }
}

/**
 * Takes the partition's lease when it is free, expired, already ours (a restart under the same owner name) or held by
 * a process of this host that is gone, bumping the fencing epoch. Returns the lease and the applied offset, or null
 * when another owner holds it.
 */
export async function acquireLease(tenantId: string, partition: number, owner: string, now: number, leaseMs: number): Promise<{ lease: Lease; offset: number } | null> {
  const rawDb = await raw();
  const t = dialect().table('PartitionState');
  const insert = dialect().parameters();
  await rawDb.execute(
    `INSERT INTO ${t} ("tenantId", "partition", "offset", "epoch", "leaseUntilMs") VALUES (${insert.bind(tenantId)}, ${insert.bind(partition)}, 0, 0, 0) ON CONFLICT DO NOTHING`,
    insert.params,
  );
  const read = dialect().parameters();
  const [state] = await rawDb.query<{ owner: string | null; epoch: unknown; offset: unknown; leaseUntilMs: unknown }>(
    `SELECT "owner", "epoch", "offset", "leaseUntilMs" FROM ${t} WHERE "tenantId" = ${read.bind(tenantId)} AND "partition" = ${read.bind(partition)}`,
    read.params,
  );
  const free = state.owner === null || state.owner === owner || num(state.leaseUntilMs) < now || isDeadLocalOwner(state.owner);
  if (!free) return null;
  // Taken only if nobody else took it since the read (same epoch).
  const epoch = num(state.epoch);
  const update = dialect().parameters();
  const taken = await rawDb.execute(
    `UPDATE ${t} SET "owner" = ${update.bind(owner)}, "epoch" = ${update.bind(epoch + 1)}, "leaseUntilMs" = ${update.bind(now + leaseMs)}
     WHERE "tenantId" = ${update.bind(tenantId)} AND "partition" = ${update.bind(partition)} AND "epoch" = ${update.bind(epoch)}`,
    update.params,
  );
  if (taken !== 1) return null;
  return { lease: { tenantId, partition, owner, epoch: epoch + 1 }, offset: num(state.offset) };
}

/** Extends a held lease; false when it was lost. */
export async function renewLease(lease: Lease, now: number, leaseMs: number): Promise<boolean> {
  const { params, bind } = dialect().parameters();
  const renewed = await (await raw()).execute(
    `UPDATE ${dialect().table('PartitionState')} SET "leaseUntilMs" = ${bind(now + leaseMs)} WHERE "tenantId" = ${bind(lease.tenantId)} AND "partition" = ${bind(lease.partition)} AND "owner" = ${bind(lease.owner)} AND "epoch" = ${bind(lease.epoch)}`,
    params,
  );
  return renewed === 1;
}

export async function releaseLease(lease: Lease): Promise<void> {
  const { params, bind } = dialect().parameters();
  await (await raw()).execute(
    `UPDATE ${dialect().table('PartitionState')} SET "owner" = NULL, "leaseUntilMs" = 0 WHERE "tenantId" = ${bind(lease.tenantId)} AND "partition" = ${bind(lease.partition)} AND "owner" = ${bind(lease.owner)} AND "epoch" = ${bind(lease.epoch)}`,
    params,
  );
}

function statement(build: (bind: (value: unknown) => string) => string): RawStatement {
  const { params, bind } = dialect().parameters();
  return { sql: build(bind), params };
}

/**
 * Aborts the transaction unless the lease is still ours (and the offset is where we left it): when the guard fails,
 * the INSERT hits the existing row's primary key, so nothing of the batch commits. One statement, no round trip to
 * inspect a row count, so a whole batch commits as one non-interactive transaction. On PostgreSQL the lease row it
 * found stays share-locked to the commit, so a takeover (an UPDATE of that row) waits for it instead of slipping in
 * between the fence and the commit; SQLite's write transaction already excludes every other writer.
 */
function fence(lease: Lease, offset?: number): RawStatement {
  return statement((bind) => {
    const t = dialect().table('PartitionState');
    // Placeholders are bound in text order (SQLite's `?` are positional).
    const head = `INSERT INTO ${t} ("tenantId", "partition") SELECT ${bind(lease.tenantId)}, ${bind(lease.partition)} WHERE NOT EXISTS (SELECT 1 FROM ${t} WHERE "tenantId" = ${bind(lease.tenantId)} AND "partition" = ${bind(lease.partition)} AND "owner" = ${bind(lease.owner)} AND "epoch" = ${bind(lease.epoch)}`;
    const guard = offset === undefined ? head : `${head} AND "offset" = ${bind(offset)}`;
    return `${guard}${dialect().lockFoundRows})`;
  });
}

const JOURNAL_ROWS_PER_STATEMENT = 20_000;
/** The PostgreSQL advisory lock key of journal writers. */
const JOURNAL_LOCK = 7300400001;

/**
 * Journal rows travel as ONE JSON parameter per statement, unpacked by SQLite's json_each / PostgreSQL's
 * json_array_elements (one statement and one round trip however many moves); seqs continue from the journal's max
 * inside the statement. On PostgreSQL a transaction-scoped advisory lock (JOURNAL_LOCK, taken before the first statement
 * that reads the max seq) serializes journal writers, so seq order is commit order and a reader after cursor N never
 * misses a later-committing smaller seq.
 */
function insertJournal(tenantId: string, moves: JournalMove[]): RawStatement[] {
  const out: RawStatement[] = [];
  // Consecutive single-user moves go as one JSON statement; a bulk move binds its bitmap bytes directly. Statements
  // run in move order, each continuing the seqs, so seq order is move order.
  for (let start = 0; start < moves.length; ) {
    if (moves[start].bitmap) {
      out.push(insertBulkMove(tenantId, moves[start++]));
      continue;
    }
    let end = start;
    while (end < moves.length && !moves[end].bitmap && end - start < JOURNAL_ROWS_PER_STATEMENT) end++;
    out.push(insertSingleMoves(tenantId, moves.slice(start, end)));
    start = end;
  }
  return out;
}

const journalColumns = () => JOURNAL_COLUMNS.map((c) => `"${c}"`).join(', ');
const nextSeqSql = () => `(SELECT COALESCE(MAX("seq"), 0) FROM ${dialect().table('Journal')})`;

function insertSingleMoves(tenantId: string, moves: JournalMove[]): RawStatement {
  const rows = moves.map((m) => [m.instanceId, m.partition, m.fromStep, m.toStep, m.user, m.count, m.leaveAction, m.enterAction, m.timeMs]);
  const t = dialect().table('Journal');
  return statement((bind) => {
    // Placeholders are bound in text order (SQLite's `?` are positional): the tenant comes before the rows.
    const tenant = bind(tenantId);
    const j = dialect().jsonArrayRows(bind(JSON.stringify(rows)));
    const fields = [j.field(0), j.field(1, 'int'), j.field(2), j.field(3), j.field(4, 'bigint'), 'NULL', j.field(5, 'bigint'), j.field(6), j.field(7), j.field(8, 'bigint')];
    return `INSERT INTO ${t} (${journalColumns()}) SELECT ${nextSeqSql()} + ${j.ordinal}, ${tenant}, ${fields.join(', ')} FROM ${j.from} ORDER BY ${j.ordinal}`;
  });
}

function insertBulkMove(tenantId: string, m: JournalMove): RawStatement {
  const bytes = Buffer.from(m.bitmap!.buffer, m.bitmap!.byteOffset, m.bitmap!.byteLength);
  return statement(
    (bind) =>
      `INSERT INTO ${dialect().table('Journal')} (${journalColumns()}) VALUES (${nextSeqSql()} + 1, ${[tenantId, m.instanceId, m.partition, m.fromStep, m.toStep, m.user, bytes, m.count, m.leaveAction, m.enterAction, m.timeMs].map(bind).join(', ')})`,
  );
}

/** A checkpoint includes every journal row committed before it in this transaction: journalSeq = the journal's max. */
function writeCheckpoint(cp: CheckpointWrite): RawStatement {
  const t = dialect().table('ShardCheckpoint');
  return statement(
    (bind) =>
      `INSERT INTO ${t} ("instanceId", "partition", "journalSeq", "data") VALUES (${bind(cp.instanceId)}, ${bind(cp.partition)}, (SELECT COALESCE(MAX("seq"), 0) FROM ${dialect().table('Journal')}), ${bind(Buffer.from(cp.data.buffer, cp.data.byteOffset, cp.data.byteLength))})
       ON CONFLICT ("instanceId", "partition") DO UPDATE SET "journalSeq" = excluded."journalSeq", "data" = excluded."data", "updatedAt" = CURRENT_TIMESTAMP`,
  );
}

export interface BatchCommit {
  /** Every partition whose lease fences this commit; `offsets` moves the first one's offset. */
  leases: Lease[];
  offsets?: { from: number; to: number };
  moves: JournalMove[];
  /** Written with journalSeq = the journal's max after this commit's moves, so they include them. */
  checkpoints?: CheckpointWrite[];
  now: number;
  /** More writes in the same transaction (instance rows, snapshots). */
  also?: (tx: Tx) => Promise<void>;
  /** More raw statements in the same transaction (dead letters of the batch). */
  extra?: RawStatement[];
}

/** Commits journal rows, the new offset and checkpoints atomically, fenced by the leases. */
export async function commitBatch(tenantId: string, commit: BatchCommit): Promise<void> {
  const statements: RawStatement[] = [];
  commit.leases.forEach((lease, i) => statements.push(fence(lease, i === 0 ? commit.offsets?.from : undefined)));
  if (commit.offsets) {
    const lease = commit.leases[0];
    statements.push(statement((bind) => `UPDATE ${dialect().table('PartitionState')} SET "offset" = ${bind(commit.offsets!.to)} WHERE "tenantId" = ${bind(lease.tenantId)} AND "partition" = ${bind(lease.partition)}`));
  }
  // Only what reads the journal's max seq needs the journal lock, and it is held to the commit: taken this late, a
  // commit holds it for its journal and checkpoint statements only, and one without either never waits for it. The
  // fences above keep their lease rows locked meanwhile, so waiting here cannot let a takeover in.
  const journalLock = dialect().serializeWriters(JOURNAL_LOCK);
  if (journalLock && (commit.moves.length > 0 || (commit.checkpoints?.length ?? 0) > 0)) statements.push(journalLock);
  statements.push(...insertJournal(tenantId, commit.moves));
  for (const cp of commit.checkpoints ?? []) statements.push(writeCheckpoint(cp));
  statements.push(...(commit.extra ?? []));
  try {
    if (commit.also) {
      const also = commit.also;
      await db().$transaction(
        async (tx) => {
          for (const s of statements) await tx.$executeRawUnsafe(s.sql, ...s.params);
          await also(tx);
        },
        { timeout: 300_000, maxWait: 300_000 },
      );
    } else {
      await (await raw()).transaction(statements);
    }
  } catch (error) {
    if (isFenceViolation(error)) throw new LeaseLostError(commit.leases[0]);
    throw error;
  }
}

function isFenceViolation(error: unknown): boolean {
  const text = `${(error as { code?: string })?.code ?? ''} ${(error as Error)?.message ?? ''} ${JSON.stringify((error as { meta?: unknown })?.meta ?? {})}`;
  return /P2002|23505|UNIQUE constraint failed: PartitionState|duplicate key value.*PartitionState/i.test(text);
}

export async function loadCheckpoint(instanceId: string, partition: number): Promise<{ journalSeq: number; data: Uint8Array } | null> {
  const { params, bind } = dialect().parameters();
  const [row] = await (await raw()).query<{ journalSeq: unknown; data: Uint8Array }>(
    `SELECT "journalSeq", "data" FROM ${dialect().table('ShardCheckpoint')} WHERE "instanceId" = ${bind(instanceId)} AND "partition" = ${bind(partition)}`,
    params,
  );
  return row ? { journalSeq: num(row.journalSeq), data: row.data } : null;
}

/** What replay needs of a journal row: the move, its time (delay/ttl buckets) and its edge count. */
export interface ReplayRow {
  seq: number;
  fromStep: string | null;
  toStep: string;
  user: number | null;
  bitmap: Uint8Array | null;
  count: number;
  timeMs: number;
}

/** Journal rows of one shard after `seq`, in seq order, in pages (recovery replays them onto the checkpoint). */
export async function* journalAfter(instanceId: string, partition: number, seq: number, pageSize = 50_000): AsyncGenerator<ReplayRow[]> {
  const rawDb = await raw();
  const number = dialect().numberColumn;
  const columns = `${number('seq')}, "fromStep", "toStep", ${number('user')}, "bitmap", ${number('count')}, ${number('timeMs')}`;
  for (let after = seq; ; ) {
    const { params, bind } = dialect().parameters();
    const rows = await rawDb.query<ReplayRow>(
      `SELECT ${columns} FROM ${dialect().table('Journal')}
       WHERE "instanceId" = ${bind(instanceId)} AND "partition" = ${bind(partition)} AND "seq" > ${bind(after)} ORDER BY "seq" LIMIT ${bind(pageSize)}`,
      params,
    );
    if (rows.length === 0) return;
    yield rows;
    after = num(rows[rows.length - 1].seq);
    if (rows.length < pageSize) return;
  }
}
