// A batch commit, after BullMQ's model: journal rows + the partition's new offset + checkpoints in ONE transaction,
// fenced by the partition lease epochs (./leases.ts). It runs on the raw driver (server/storage/raw.ts), the engine's
// hot path; only a commit that also writes through Prisma (`also`, instance operations) is a Prisma transaction.
import type { Tx } from '../db';
import { type DeadLetterWrite, deadLetterInserts } from '../dead-letters';
import type { RawStatement } from '../raw';
import { type ConversionWrite, deleteConversions, insertConversions } from './conversions';
import { type CrowdChangeWrite, crowdChangeInserts } from './crowd-changes';
import { JOURNAL_SEQUENCE, nextJournalSeqSql, tenantMaxSeqSql } from './max-seq';
import { LeaseLostError, type Lease } from './leases';
import { BYTES_PER_STATEMENT, type OfTenant, uniqueShardChunks } from './shard-rows';
import { deleteTimerPlans, writeTimerPlans, type TimerPlanWrite } from './timer-plans';
import type { Database } from '../database';

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
  /** It holds changes of step members no journal row carries (a crowd update): readers that replay rebuild from it. */
  unjournaled?: boolean;
}

const JOURNAL_COLUMNS = ['seq', 'tenantId', 'instanceId', 'partition', 'fromStep', 'toStep', 'user', 'bitmap', 'count', 'leaveAction', 'enterAction', 'timeMs'];

function statement(database: Database, build: (bind: (value: unknown) => string) => string): RawStatement {
  const { params, bind } = database.dialect.parameters();
  return { sql: build(bind), params };
}

/**
 * Aborts the transaction unless the lease is still ours (and the offset is where we left it): when the guard fails,
 * the INSERT hits the existing row's primary key, so nothing of the batch commits. One statement, no round trip to
 * inspect a row count, so a whole batch commits as one non-interactive transaction. On PostgreSQL the lease row it
 * found stays key-share-locked to the commit, so a takeover (which locks the row for update first: leases.ts) waits
 * for it instead of slipping in between the fence and the commit, while a lease renewal neither waits for the commit
 * nor holds it up; SQLite's write transaction already excludes every other writer.
 */
function fence(database: Database, lease: Lease, offset?: number): RawStatement {
  return statement(database, (bind) => {
    const t = database.dialect.table('PartitionState');
    // Placeholders are bound in text order (SQLite's `?` are positional).
    const head = `INSERT INTO ${t} ("tenantId", "partition") SELECT ${bind(lease.tenantId)}, ${bind(lease.partition)}
      WHERE NOT EXISTS (SELECT 1 FROM ${t} WHERE "tenantId" = ${bind(lease.tenantId)} AND "partition" = ${bind(lease.partition)} AND "owner" = ${bind(lease.owner)} AND "epoch" = ${bind(lease.epoch)}`;
    const guard = offset === undefined ? head : `${head} AND "offset" = ${bind(offset)}`;
    return `${guard}${database.dialect.lockFoundRows})`;
  });
}

/**
 * The fence of several leases of one owner (a timer tick or an operation over every partition, the timer firings of
 * many tenants) as ONE statement: the same guard as `fence` for each lease, the leases bound as one JSON array (a
 * `UNION ALL` of one SELECT per lease took PostgreSQL 224-473 ms to plan and run for 512 leases).
 */
function fenceEach(database: Database, leases: Lease[]): RawStatement {
  return statement(database, (bind) => {
    const t = database.dialect.table('PartitionState');
    // Placeholders are bound in text order (SQLite's `?` are positional): the leases' array, then the owner.
    const j = database.dialect.jsonArrayRows(bind(JSON.stringify(leases.map((lease) => [lease.tenantId, lease.partition, lease.epoch]))));
    const [tenant, partition, epoch] = [j.field(0), j.field(1, 'int'), j.field(2, 'int')];
    return `INSERT INTO ${t} ("tenantId", "partition") SELECT ${tenant}, ${partition} FROM ${j.from}
      WHERE NOT EXISTS (SELECT 1 FROM ${t} s WHERE s."tenantId" = ${tenant} AND s."owner" = ${bind(leases[0].owner)}
        AND s."partition" = ${partition} AND s."epoch" = ${epoch}${database.dialect.lockFoundRows})`;
  });
}

/** Every lease's fence; the first lease also guards the offset the commit moves. */
function fences(database: Database, leases: Lease[], offset?: number): RawStatement[] {
  if (leases.length === 0) return [];
  const [first, ...rest] = leases;
  const guarded = offset === undefined ? [] : [fence(database, first, offset)];
  const together = offset === undefined ? leases : rest;
  if (together.some((lease) => lease.owner !== first.owner)) return [...guarded, ...together.map((lease) => fence(database, lease))];
  return together.length > 0 ? [...guarded, fenceEach(database, together)] : guarded;
}

const JOURNAL_ROWS_PER_STATEMENT = 20_000;
/** Bulk moves per statement: 11 parameters each, and their bitmaps' bytes bounded (BYTES_PER_STATEMENT). */
const BULK_ROWS_PER_STATEMENT = 1_000;
/** The PostgreSQL advisory lock key of journal writers (one lock per tenant). */
const JOURNAL_LOCK = 7300400001;

/**
 * Journal rows travel as ONE JSON parameter per statement, unpacked by SQLite's json_each / PostgreSQL's
 * json_array_elements (one statement and one round trip however many moves); seqs are taken inside the statement
 * (./max-seq.ts). On PostgreSQL a transaction-scoped advisory lock per tenant (JOURNAL_LOCK, taken before the first
 * statement that takes a seq) serializes each tenant's journal writers, so a tenant's seq order is its commit order and
 * a reader after cursor N never misses a later-committing smaller seq of that tenant; other tenants commit meanwhile.
 */
function insertJournal(database: Database, parts: TenantMoves[]): RawStatement[] {
  const entries = parts.flatMap(({ tenantId, moves }) => moves.map((move) => ({ tenantId, move })));
  const out: RawStatement[] = [];
  // Consecutive bulk moves (of any tenant) go as one multi-row statement binding their bitmap bytes; consecutive
  // single-user moves of one tenant as one JSON statement. Statements run in move order, each continuing the seqs,
  // so seq order is move order.
  for (let start = 0; start < entries.length; ) {
    let end = start + 1;
    if (entries[start].move.bitmap) {
      let bytes = entries[start].move.bitmap!.byteLength;
      while (
        end < entries.length &&
        entries[end].move.bitmap &&
        end - start < BULK_ROWS_PER_STATEMENT &&
        bytes + entries[end].move.bitmap!.byteLength <= BYTES_PER_STATEMENT
      )
        bytes += entries[end++].move.bitmap!.byteLength;
      out.push(insertBulkMoves(database, entries.slice(start, end)));
    } else {
      const tenantId = entries[start].tenantId;
      while (end < entries.length && !entries[end].move.bitmap && entries[end].tenantId === tenantId && end - start < JOURNAL_ROWS_PER_STATEMENT) end++;
      out.push(
        insertSingleMoves(
          database,
          tenantId,
          entries.slice(start, end).map((e) => e.move),
        ),
      );
    }
    start = end;
  }
  return out;
}

const journalColumns = () => JOURNAL_COLUMNS.map((c) => `"${c}"`).join(', ');

function insertSingleMoves(database: Database, tenantId: string, moves: JournalMove[]): RawStatement {
  const rows = moves.map((m) => [m.instanceId, m.partition, m.fromStep, m.toStep, m.user, m.count, m.leaveAction, m.enterAction, m.timeMs]);
  const t = database.dialect.table('Journal');
  return statement(database, (bind) => {
    // Placeholders are bound in text order (SQLite's `?` are positional): the tenant comes before the rows.
    const tenant = bind(tenantId);
    const j = database.dialect.jsonArrayRows(bind(JSON.stringify(rows)));
    const fields = [
      j.field(0),
      j.field(1, 'int'),
      j.field(2),
      j.field(3),
      j.field(4, 'bigint'),
      'NULL',
      j.field(5, 'bigint'),
      j.field(6),
      j.field(7),
      j.field(8, 'bigint'),
    ];
    return `INSERT INTO ${t} (${journalColumns()}) SELECT ${nextJournalSeqSql(database, j.ordinal)}, ${tenant}, ${fields.join(', ')} FROM ${j.from} ORDER BY ${j.ordinal}`;
  });
}

/** The types of a bulk move's values, in JOURNAL_COLUMNS order after `seq`: a VALUES in a FROM does not take them from the table. */
const BULK_MOVE_TYPES = ['text', 'text', 'int', 'text', 'text', 'bigint', 'bytea', 'bigint', 'text', 'text', 'bigint'] as const;

/**
 * Bulk moves as one multi-row INSERT: every row's seq is the sequence's next value (PostgreSQL) or the journal's max,
 * read ONCE (with the statement's snapshot), plus its position (SQLite). A max subquery per row cost PostgreSQL a plan
 * each: 512 rows (64 tenants' minute firing) took 190–300 ms to insert where the one read takes 15 ms, and 1,000
 * tenants' firing spent ~4 s there.
 */
function insertBulkMoves(database: Database, entries: { tenantId: string; move: JournalMove }[]): RawStatement {
  const { dialect } = database;
  return statement(database, (bind) => {
    const rows = entries.map(({ tenantId, move: m }, i) => {
      const bytes = Buffer.from(m.bitmap!.buffer, m.bitmap!.byteOffset, m.bitmap!.byteLength);
      const values = [tenantId, m.instanceId, m.partition, m.fromStep, m.toStep, m.user, bytes, m.count, m.leaveAction, m.enterAction, m.timeMs];
      return `(${i + 1}, ${values.map((value, v) => dialect.typed(bind(value), BULK_MOVE_TYPES[v])).join(', ')})`;
    });
    // VALUES columns are column1, column2, … on both SQLite and PostgreSQL; column1 is the row's position.
    const columns = BULK_MOVE_TYPES.map((_, v) => `v.column${v + 2}`).join(', ');
    const next = dialect.nextInSequence(JOURNAL_SEQUENCE);
    const from = next
      ? `SELECT ${next}, ${columns} FROM (VALUES ${rows.join(', ')}) AS v`
      : `SELECT m.s + v.column1, ${columns} FROM (SELECT COALESCE(MAX("seq"), 0) AS s FROM ${dialect.table('Journal')}) AS m, (VALUES ${rows.join(', ')}) AS v`;
    return `INSERT INTO ${dialect.table('Journal')} (${journalColumns()}) ${from} ORDER BY v.column1`;
  });
}

/**
 * Checkpoints as multi-row statements, each including every journal row of its tenant committed before it in this
 * transaction: journalSeq = the tenant's max. Those with and without `unjournaled` go apart, since the flag adds to the
 * row's count.
 */
function writeCheckpoints(database: Database, checkpoints: OfTenant<CheckpointWrite>[]): RawStatement[] {
  const t = database.dialect.table('ShardCheckpoint');
  const kinds = [checkpoints.filter((cp) => !cp.unjournaled), checkpoints.filter((cp) => cp.unjournaled)];
  return kinds.flatMap((kind, unjournaled) =>
    uniqueShardChunks(kind, (cp) => cp.data.byteLength).map((chunk) =>
      statement(database, (bind) => {
        const rows = chunk.map(
          (cp) =>
            `(${bind(cp.tenantId)}, ${bind(cp.instanceId)}, ${bind(cp.partition)}, ${tenantMaxSeqSql(database, bind(cp.tenantId))}, ${bind(Buffer.from(cp.data.buffer, cp.data.byteOffset, cp.data.byteLength))})`,
        );
        return `INSERT INTO ${t} ("tenantId", "instanceId", "partition", "journalSeq", "data") VALUES ${rows.join(', ')}
          ON CONFLICT ("tenantId", "instanceId", "partition") DO UPDATE SET "journalSeq" = excluded."journalSeq", "data" = excluded."data",
            "updatedAt" = CURRENT_TIMESTAMP, "unjournaled" = ${t}."unjournaled" + ${unjournaled}`;
      }),
    ),
  );
}

export interface TenantMoves {
  tenantId: string;
  moves: JournalMove[];
}

export interface BatchCommit {
  /** Every partition whose lease fences this commit; `offsets` moves the first one's offset. */
  leases: Lease[];
  offsets?: { from: number; to: number };
  moves: JournalMove[];
  /** Written with journalSeq = the tenant's max seq after this commit's moves, so they include them. */
  checkpoints?: CheckpointWrite[];
  /** Timer plans of shards without a checkpoint in this commit (timer-plans.ts), with journalSeq like checkpoints. */
  timerPlans?: TimerPlanWrite[];
  now: number;
  /** More writes in the same transaction (instance rows, snapshots). */
  also?: (tx: Tx) => Promise<void>;
  /** The batch's dead letters and conversions, written after everything above. */
  deadLetters?: DeadLetterWrite[];
  conversions?: ConversionWrite[];
  /** The instance turns `running` (started at `now`) in this commit: a start's last one. */
  started?: { instanceId: string; userCount: number; excludedCount: number };
  /** What a crowd update changed in each shard, after the journal rows it follows. */
  crowdChanges?: CrowdChangeWrite[];
}

/** One tenant's commit among several committed together (commitTogether). */
export interface TenantCommit {
  tenantId: string;
  commit: Omit<BatchCommit, 'also'>;
}

/**
 * The statements of one transaction committing every given tenant's batch: all fences first (one statement for the
 * leases of one owner), then the journal lock once, then every journal row, checkpoint and timer plan, then each
 * commit's other rows (afterTheJournal).
 */
function commitStatements(database: Database, commits: TenantCommit[]): RawStatement[] {
  const statements: RawStatement[] = [];
  const unguarded = commits.filter(({ commit }) => !commit.offsets).flatMap(({ commit }) => commit.leases);
  statements.push(...fences(database, unguarded));
  for (const { commit } of commits) {
    if (!commit.offsets) continue;
    const lease = commit.leases[0];
    statements.push(...fences(database, commit.leases, commit.offsets.from));
    statements.push(
      statement(
        database,
        (bind) => `UPDATE ${database.dialect.table('PartitionState')} SET "offset" = ${bind(commit.offsets!.to)}
      WHERE "tenantId" = ${bind(lease.tenantId)} AND "partition" = ${bind(lease.partition)}`,
      ),
    );
  }
  // Only what takes or reads a tenant's seqs needs its journal lock, and it is held to the commit: taken this late, a
  // commit holds it for its journal and checkpoint statements only, and one without either never waits for it. The
  // fences above keep their lease rows locked meanwhile, so waiting here cannot let a takeover in.
  const readingSeqs = commits.filter(({ commit }) => readsSeqs(commit)).map(({ tenantId }) => tenantId);
  const journalLock = readingSeqs.length > 0 ? database.dialect.serializeWriters(JOURNAL_LOCK, readingSeqs) : null;
  if (journalLock) statements.push(journalLock);
  statements.push(
    ...insertJournal(
      database,
      commits.map(({ tenantId, commit }) => ({ tenantId, moves: commit.moves })),
    ),
  );
  // Checkpoints replace their shards' conversion rows and timer plans; the plans of shards without one come after.
  const checkpoints = commits.flatMap(({ tenantId, commit }) => ofTenant(tenantId, commit.checkpoints));
  if (checkpoints.length > 0)
    statements.push(...writeCheckpoints(database, checkpoints), deleteConversions(database, checkpoints), deleteTimerPlans(database, checkpoints));
  statements.push(
    ...writeTimerPlans(
      database,
      commits.flatMap(({ tenantId, commit }) => ofTenant(tenantId, commit.timerPlans)),
    ),
  );
  for (const { tenantId, commit } of commits) statements.push(...afterTheJournal(database, tenantId, commit));
  return statements;
}

function readsSeqs(commit: Omit<BatchCommit, 'also'>): boolean {
  return [commit.moves, commit.checkpoints, commit.timerPlans, commit.crowdChanges].some((rows) => (rows?.length ?? 0) > 0);
}

/** The statements of a commit's other rows, in this order. */
function afterTheJournal(database: Database, tenantId: string, commit: Omit<BatchCommit, 'also'>): RawStatement[] {
  const statements = [...deadLetterInserts(database, tenantId, commit.deadLetters ?? []), ...insertConversions(database, tenantId, commit.conversions ?? [])];
  if (commit.started) statements.push(markRunning(database, tenantId, commit.started, commit.now));
  statements.push(...crowdChangeInserts(database, tenantId, commit.crowdChanges ?? []));
  return statements;
}

/** A commit's shard rows with its tenant: several tenants' rows go into one statement. */
function ofTenant<Row extends object>(tenantId: string, rows: Row[] | undefined): OfTenant<Row>[] {
  return (rows ?? []).map((row) => ({ ...row, tenantId }));
}

function markRunning(database: Database, tenantId: string, started: NonNullable<BatchCommit['started']>, now: number): RawStatement {
  const sql = database.dialect;
  const { params, bind } = sql.parameters();
  // Placeholders are bound in text order (SQLite's `?` are positional).
  const set = `"state" = 'running', "userCount" = ${bind(started.userCount)}, "excludedCount" = ${bind(started.excludedCount)}, "startedAt" = ${sql.typed(bind(sql.timestamp(now)), 'timestamp')}`;
  return { sql: `UPDATE ${sql.table('Instance')} SET ${set} WHERE "tenantId" = ${bind(tenantId)} AND "id" = ${bind(started.instanceId)}`, params };
}

/** Commits journal rows, the new offset and checkpoints atomically, fenced by the leases. */
export async function commitBatch(database: Database, tenantId: string, commit: BatchCommit): Promise<void> {
  const statements = commitStatements(database, [{ tenantId, commit }]);
  try {
    if (commit.also) {
      const also = commit.also;
      await database.db.$transaction(
        async (tx) => {
          for (const s of statements) await tx.$executeRawUnsafe(s.sql, ...s.params);
          await also(tx);
        },
        { timeout: 300_000, maxWait: 300_000 },
      );
    } else {
      await (await database.raw()).transaction(statements);
    }
  } catch (error) {
    if (isFenceViolation(error)) throw new LeaseLostError(commit.leases[0]);
    throw error;
  }
}

/** What became of one commit of several committed together: null when it committed. */
export type CommitOutcome = { error: unknown } | null;

/**
 * Commits several tenants' batches in ONE transaction: one journal lock and one COMMIT for all of them (the timer
 * firings of a minute over many tenants, the checkpoints due at the same moment). When that fails (a lost lease of
 * any one fails the whole), each commits alone (commitBatch), so a lost lease costs only its own batch.
 */
export async function commitTogetherOrAlone(database: Database, commits: TenantCommit[]): Promise<CommitOutcome[]> {
  const alone = ({ tenantId, commit }: TenantCommit) =>
    commitBatch(database, tenantId, commit).then(
      () => null,
      (error: unknown) => ({ error }),
    );
  if (commits.length === 1) return [await alone(commits[0])];
  try {
    await (await database.raw()).transaction(commitStatements(database, commits));
    return commits.map(() => null);
  } catch {
    const outcomes: CommitOutcome[] = [];
    for (const commit of commits) outcomes.push(await alone(commit));
    return outcomes;
  }
}

function isFenceViolation(error: unknown): boolean {
  const text = `${(error as { code?: string })?.code ?? ''} ${(error as Error)?.message ?? ''} ${JSON.stringify((error as { meta?: unknown })?.meta ?? {})}`;
  return /P2002|23505|UNIQUE constraint failed: PartitionState|duplicate key value.*PartitionState/i.test(text);
}
