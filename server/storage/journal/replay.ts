// What recovery reads back: shard checkpoints and the journal rows committed after them, in seq order.
import { nextTurnOfTheLoop } from '../../clock';
import { num } from './row-number';
import type { Database } from '../database';
import type { RawDb } from '../raw';

export interface Checkpoint {
  journalSeq: number;
  data: Uint8Array;
  /** Checkpoints of the shard so far that hold changes no journal row carries. */
  unjournaled: number;
}

export async function loadCheckpoint(database: Database, tenantId: string, instanceId: string, partition: number): Promise<Checkpoint | null> {
  return (await loadCheckpoints(database, tenantId, instanceId, [partition])).get(partition) ?? null;
}

/** The checkpoints of the given partitions of one instance (absent partitions have none), in one statement. */
export async function loadCheckpoints(database: Database, tenantId: string, instanceId: string, partitions: number[]): Promise<Map<number, Checkpoint>> {
  const { params, bind } = database.dialect.parameters();
  const rows = await (await database.raw()).query<{ partition: unknown; journalSeq: unknown; data: Uint8Array; unjournaled: unknown }>(
    `SELECT "partition", "journalSeq", "data", "unjournaled" FROM ${database.dialect.table('ShardCheckpoint')}
     WHERE "tenantId" = ${bind(tenantId)} AND "instanceId" = ${bind(instanceId)} AND "partition" IN (${partitions.map(bind).join(', ')})`,
    params,
  );
  return new Map(rows.map((row) => [num(row.partition), { journalSeq: num(row.journalSeq), data: row.data, unjournaled: num(row.unjournaled) }]));
}

/** The `unjournaled` count of the shard's checkpoint, without its data (null: it has none). */
export async function unjournaledCheckpoints(database: Database, tenantId: string, instanceId: string, partition: number): Promise<number | null> {
  const { params, bind } = database.dialect.parameters();
  const rows = await (await database.raw()).query<{ unjournaled: unknown }>(
    `SELECT "unjournaled" FROM ${database.dialect.table('ShardCheckpoint')}
     WHERE "tenantId" = ${bind(tenantId)} AND "instanceId" = ${bind(instanceId)} AND "partition" = ${bind(partition)}`,
    params,
  );
  return rows.length > 0 ? num(rows[0].unjournaled) : null;
}

/**
 * What replay needs of a journal row, as the columns the read selects (an array per row: a million rows are read at
 * boot, and row objects cost as much again): the move, its time (delay/ttl buckets) and its edge count.
 */
export type ReplayRow = [
  seq: number,
  partition: number,
  fromStep: string | null,
  toStep: string,
  user: number | null,
  bitmap: Uint8Array | null,
  count: number,
  timeMs: number,
];
export const SEQ = 0;
export const PARTITION = 1;
export const FROM_STEP = 2;
export const TO_STEP = 3;
export const USER = 4;
export const BITMAP = 5;
export const COUNT = 6;
export const TIME_MS = 7;

/**
 * Journal rows a replay reads and visits at once. A page is one block of the engine thread on SQLite (the driver is
 * synchronous: the query, then the visit, each in one go), and other tenants' work waits for it: pages of 50,000 held
 * it 100-240 ms each (the recovery bench, `--profile`), of 8,192 about 30 ms for the query.
 */
const PAGE_SIZE = 4_096;

/** The columns of a ReplayRow, in its order. */
const REPLAY_COLUMNS = ['seq', 'partition', 'fromStep', 'toStep', 'user', 'bitmap', 'count', 'timeMs'];
const NUMBER_COLUMNS: ReadonlySet<string> = new Set(['seq', 'user', 'count', 'timeMs']);

function replayColumns(database: Database): string {
  return REPLAY_COLUMNS.map((c) => (NUMBER_COLUMNS.has(c) ? database.dialect.numberColumn(c) : `"${c}"`)).join(', ');
}

/** The replay columns with a flag (1 or 0) where the bitmap goes: bytes have no JSON form, and few rows hold one. */
const PACKED_COLUMNS = REPLAY_COLUMNS.map((c) => (c === 'bitmap' ? 'CASE WHEN "bitmap" IS NULL THEN 0 ELSE 1 END AS "bitmap"' : `"${c}"`)).join(', ');

/**
 * Hands the journal rows of one shard after `seq` to `visit`, in seq order; with `untilMs`, only moves made at or before
 * then (point-in-time reads, server/engine/as-of.ts).
 */
export function journalAfter(
  database: Database,
  tenantId: string,
  instanceId: string,
  partition: number,
  seq: number,
  visit: (row: ReplayRow) => void,
  untilMs = Number.POSITIVE_INFINITY,
): Promise<void> {
  const { withoutIndex } = database.dialect;
  return pages(
    database,
    tenantId,
    seq,
    visit,
    (after, bind) =>
      `WHERE ${withoutIndex('"tenantId"')} = ${bind(tenantId)} AND "instanceId" = ${bind(instanceId)} AND "partition" = ${bind(partition)} AND "seq" > ${bind(after)}${until(untilMs, bind)}`,
  );
}

// Each read names the tenant as well as the instance (docs/SCALING.md), never as the index to use: the instance's
// index (instanceId, partition, seq) or the seq order decide the plan, as they did before.
const until = (untilMs: number, bind: (value: unknown) => string) => (Number.isFinite(untilMs) ? ` AND "timeMs" <= ${bind(untilMs)}` : '');

/**
 * The time of each shard's last journal row at or before its seq (`seqs`: partition → seq, e.g. the newest move each
 * checkpoint holds), in one statement; a partition with no row left is absent.
 */
export async function lastMoveTimes(database: Database, tenantId: string, instanceId: string, seqs: Map<number, number>): Promise<Map<number, number>> {
  if (seqs.size === 0) return new Map();
  const { params, bind } = database.dialect.parameters();
  const journal = database.dialect.table('Journal');
  const newest = [...seqs].map(
    ([partition, seq], i) =>
      `SELECT * FROM (SELECT "partition", ${database.dialect.numberColumn('timeMs')} FROM ${journal}
       WHERE ${database.dialect.withoutIndex('"tenantId"')} = ${bind(tenantId)} AND "instanceId" = ${bind(instanceId)} AND "partition" = ${bind(partition)}
         AND "seq" <= ${bind(seq)} ORDER BY ${journal}."seq" DESC LIMIT 1) AS "p${i}"`,
  );
  const rows = await (await database.raw()).query<{ partition: unknown; timeMs: unknown }>(newest.join(' UNION ALL '), params);
  return new Map(rows.map((row) => [num(row.partition), num(row.timeMs)]));
}

/** Rows read by the first page of a read back from a checkpoint: a moment an hour back is a few hundred rows a partition. */
const FIRST_PAGE_BACK = 256;

/**
 * Hands the journal rows of one shard at or before `seq` that moved after `afterMs` to `visit`, newest first (a
 * checkpoint turned back to an earlier moment, server/engine/rewind.ts). A shard's moves are made in seq order, so the read
 * stops at its first row made by `afterMs`; its pages start small and grow fourfold up to PAGE_SIZE.
 */
export async function journalBackTo(
  database: Database,
  tenantId: string,
  instanceId: string,
  partition: number,
  seq: number,
  afterMs: number,
  visit: (row: ReplayRow) => void,
): Promise<void> {
  const rawDb = await database.raw();
  const journal = database.dialect.table('Journal');
  let before = seq + 1;
  const onRow = (row: ReplayRow) => {
    before = row[SEQ];
    visit(row);
  };
  const madeAfter = (row: ReplayRow) => row[TIME_MS] > afterMs;
  for (let size = FIRST_PAGE_BACK; ; size = Math.min(size * 4, PAGE_SIZE)) {
    const { params, bind } = database.dialect.parameters();
    const rows = `FROM ${journal} WHERE ${database.dialect.withoutIndex('"tenantId"')} = ${bind(tenantId)} AND "instanceId" = ${bind(instanceId)}
      AND "partition" = ${bind(partition)} AND "seq" < ${bind(before)} ORDER BY ${journal}."seq" DESC LIMIT ${bind(size)}`;
    const { read, cut } = await readPage(database, rawDb, tenantId, rows, params, onRow, 'newest first', madeAfter);
    if (cut || read < size) return;
  }
}

/**
 * Hands the journal rows of every partition of one instance after `seq` to `visit`, in seq order: one pass in the
 * journal's own (seq) order instead of one read per partition through the (instanceId, partition, seq) index.
 */
export function instanceJournalAfter(
  database: Database,
  tenantId: string,
  instanceId: string,
  seq: number,
  visit: (row: ReplayRow) => void,
  untilMs = Number.POSITIVE_INFINITY,
): Promise<void> {
  const { withoutIndex } = database.dialect;
  return pages(
    database,
    tenantId,
    seq,
    visit,
    (after, bind) =>
      `WHERE "seq" > ${bind(after)} AND ${withoutIndex('"tenantId"')} = ${bind(tenantId)} AND ${withoutIndex('"instanceId"')} = ${bind(instanceId)}${until(untilMs, bind)}`,
  );
}

/**
 * Whether recovery should read the instance's journal in one pass in seq order rather than a read per partition: only
 * where the database reads faster that way (not PostgreSQL, which reads faster by the index) and the instance's rows
 * dominate the range.
 */
export async function onePassPays(database: Database, tenantId: string, instanceId: string, seq: number): Promise<boolean> {
  return database.dialect.journalPassInSeqOrder && (await instanceRowsDominate(database, tenantId, instanceId, seq));
}

/** Journal seqs after the checkpoint whose rows instanceRowsDominate counts: at most this many rows are read. */
const DOMINANCE_WINDOW = 8_192;

/**
 * Whether the instance's rows are at least half of the journal after `seq`: only then is one pass in seq order cheaper
 * than a read per partition through the index. An instance idle since an old checkpoint would otherwise read every
 * other instance's rows since then. Judged by the rows of the first DOMINANCE_WINDOW seqs after `seq`: counting up to
 * half of the whole range held the engine thread 160-180 ms of a restart over 360,000 rows, and the choice only
 * decides how fast the replay reads, not what it reads.
 */
export async function instanceRowsDominate(database: Database, tenantId: string, instanceId: string, seq: number): Promise<boolean> {
  const journal = database.dialect.table('Journal');
  const rawDb = await database.raw();
  const [newest] = await rawDb.query<{ s: unknown }>(`SELECT COALESCE(MAX("seq"), 0) AS s FROM ${journal}`, []);
  const window = Math.min(num(newest?.s) - seq, DOMINANCE_WINDOW);
  if (!(window > 0)) return false;
  const { params, bind } = database.dialect.parameters();
  // Through the key's range, not the instance's index: that one leads by partition, so the seq range would not bound
  // what it reads (every row of the instance, ~180 ms at 360,000).
  const { withoutIndex } = database.dialect;
  const [own] = await rawDb.query<{ own: unknown }>(
    `SELECT COUNT(*) AS "own" FROM ${journal} WHERE "seq" > ${bind(seq)} AND "seq" <= ${bind(seq + window)}
       AND ${withoutIndex('"tenantId"')} = ${bind(tenantId)} AND ${withoutIndex('"instanceId"')} = ${bind(instanceId)}`,
    params,
  );
  return num(own?.own) * 2 >= window;
}

/** Pages of PAGE_SIZE rows with a turn of the event loop between them, so a long replay lets other work in. */
async function pages(
  database: Database,
  tenantId: string,
  seq: number,
  visit: (row: ReplayRow) => void,
  where: (after: number, bind: (value: unknown) => string) => string,
): Promise<void> {
  const rawDb = await database.raw();
  const journal = database.dialect.table('Journal');
  for (let after = seq; ; ) {
    const { params, bind } = database.dialect.parameters();
    // Ordered by the table's column, not the selected alias of the same name (PostgreSQL selects "seq"::float8 AS
    // "seq", and ordering by that expression can use no index: it sorted every remaining row for each page).
    const rows = `FROM ${journal} ${where(after, bind)} ORDER BY ${journal}."seq" LIMIT ${bind(PAGE_SIZE)}`;
    const onRow = (row: ReplayRow) => {
      after = row[SEQ];
      visit(row);
    };
    if ((await readPage(database, rawDb, tenantId, rows, params, onRow, 'oldest first')).read < PAGE_SIZE) return;
    // On SQLite the driver is synchronous: without this the pages would follow each other as one block.
    await nextTurnOfTheLoop();
  }
}

/**
 * The replay columns of the rows `rows` (a FROM … ORDER BY … LIMIT clause) selects, visited in `order` (that of the
 * clause), up to the first row `wanted` refuses (`cut`: there was one); `read`: how many rows the page held.
 */
async function readPage(
  database: Database,
  rawDb: RawDb,
  tenantId: string,
  rows: string,
  params: unknown[],
  visit: (row: ReplayRow) => void,
  order: 'oldest first' | 'newest first',
  wanted: (row: ReplayRow) => boolean = () => true,
): Promise<{ read: number; cut: boolean }> {
  const packed = database.dialect.packedRows(`SELECT ${PACKED_COLUMNS} ${rows}`, REPLAY_COLUMNS, 'seq');
  if (packed) return packedPage(database, rawDb, tenantId, packed, params, visit, order, wanted);
  let cut = false;
  const read = await rawDb.each(`SELECT ${replayColumns(database)} ${rows}`, params, (row) => {
    if (cut || !wanted(row as ReplayRow)) cut = true;
    else visit(row as ReplayRow);
  });
  return { read, cut };
}

/** A page read as one JSON text (`Dialect.packedRows`), then the bitmap of each of its wanted bulk moves by its seq. */
async function packedPage(
  database: Database,
  rawDb: RawDb,
  tenantId: string,
  sql: string,
  params: unknown[],
  visit: (row: ReplayRow) => void,
  order: 'oldest first' | 'newest first',
  wanted: (row: ReplayRow) => boolean,
): Promise<{ read: number; cut: boolean }> {
  const [{ rows: packed }] = await rawDb.query<{ rows: string }>(sql, params);
  // The packed array is in seq order whatever the page's order.
  const read = JSON.parse(packed) as ReplayRow[];
  if (order === 'newest first') read.reverse();
  const end = read.findIndex((row) => !wanted(row));
  const rows = end === -1 ? read : read.slice(0, end);
  const { bind } = database.dialect.parameters();
  const bitmapOf = `SELECT "bitmap" FROM ${database.dialect.table('Journal')} WHERE "seq" = ${bind(0)} AND "tenantId" = ${bind(tenantId)}`;
  for (const row of rows) {
    row[BITMAP] = (row[BITMAP] as unknown) === 1 ? (await rawDb.query<{ bitmap: Uint8Array }>(bitmapOf, [row[SEQ], tenantId]))[0].bitmap : null;
  }
  // Visited in one turn once every bitmap is there, as a page of rows read whole is.
  for (const row of rows) visit(row);
  return { read: read.length, cut: end !== -1 };
}
