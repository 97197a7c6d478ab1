// Reads of an instance's journal moves for analytics (server/analytics/journal-window.ts pages through them): one
// partition at a time, within a time window, single-user moves and bulk moves apart. Single moves cross as text, a
// page of them in one string per edge or per page: read as rows, each of a day's 470,000 single moves cost a JS array
// and two step names, which was most of the time. Bulk rows carry bitmaps (up to ~1 MB each for a 10M-user crowd), so
// they come a few at a time, found through the partial index of bulk moves (Journal_bulk_tenantId_partition_seq_idx)
// rather than by walking every single move.
import type { Database } from './database';

/** One partition of an instance's journal, in the half-open time window [from, to) (epoch ms). */
export interface JournalPartitionWindow {
  tenantId: string;
  instanceId: string;
  partition: number;
  from: number;
  to: number;
}

/** The single moves of one edge in a page: how many, the last one's seq, and their users as decimal text, comma-separated. */
export interface EdgeMovesText {
  fromStep: string | null;
  toStep: string;
  moves: number;
  lastSeq: number;
  users: string;
}

/** The next `limit` single moves of the partition after seq `after`, grouped by edge. */
export async function singleMovesByEdge(database: Database, window: JournalPartitionWindow, after: number, limit: number): Promise<EdgeMovesText[]> {
  const { dialect } = database;
  const { params, bind } = dialect.parameters();
  const inner = `SELECT "seq", "fromStep", "toStep", "user" FROM ${dialect.table('Journal')} ${singlesWhere(database, window, after, Number.POSITIVE_INFINITY, bind)} ORDER BY "seq" LIMIT ${limit}`;
  const edges: EdgeMovesText[] = [];
  await (await database.raw()).each(
    `SELECT r."fromStep", r."toStep", COUNT(*), MAX(r."seq"), ${dialect.integerList('r."user"')} FROM (${inner}) r GROUP BY r."fromStep", r."toStep"`,
    params,
    (row) => {
      const [fromStep, toStep, moves, last, users] = row as [string | null, string, unknown, unknown, string | null];
      edges.push({ fromStep, toStep, moves: Number(moves), lastSeq: Number(last), users: users ?? '' });
    },
  );
  return edges;
}

/**
 * The next `limit` single moves of the partition into `toSteps` with after < seq < before, in seq order: how many,
 * the last one's seq, and each move as one integer, user × toSteps.length + its step's place in toSteps (< 2^53 for
 * any user ID), in decimal text, comma-separated.
 */
export async function singleMovesInto(
  database: Database,
  window: JournalPartitionWindow,
  toSteps: string[],
  after: number,
  before: number,
  limit: number,
): Promise<{ moves: number; lastSeq: number; codes: string }> {
  const { dialect } = database;
  const { params, bind } = dialect.parameters();
  const code = `CASE "toStep" ${toSteps.map((step, k) => `WHEN ${bind(step)} THEN ${k}`).join(' ')} END`;
  const inner = `SELECT "seq", "user" * ${toSteps.length} + ${code} AS "move" FROM ${dialect.table('Journal')} ${singlesWhere(database, window, after, before, bind, toSteps)} ORDER BY "seq" LIMIT ${limit}`;
  let row: unknown[] = [0, null, null];
  await (await database.raw()).each(`SELECT COUNT(*), MAX(r."seq"), ${dialect.integerList('r."move"', 'r."seq"')} FROM (${inner}) r`, params, (found) => {
    row = found;
  });
  return { moves: Number(row[0]), lastSeq: Number(row[1]), codes: String(row[2] ?? '') };
}

/** The single moves of a partition with after < seq < before, in the window (into `toSteps` when given). */
function singlesWhere(
  database: Database,
  window: JournalPartitionWindow,
  after: number,
  before: number,
  bind: (value: unknown) => string,
  toSteps?: string[],
): string {
  // Placeholders are bound in text order (SQLite's `?` are positional): each term is written as it is bound. The tenant
  // is named (docs/SCALING.md) but not as the index to read by: the instance's index (instanceId, partition, seq) is.
  let where = `WHERE ${database.dialect.withoutIndex('"tenantId"')} = ${bind(window.tenantId)} AND "instanceId" = ${bind(window.instanceId)} AND "partition" = ${bind(window.partition)} AND "seq" > ${bind(after)}`;
  if (Number.isFinite(before)) where += ` AND "seq" < ${bind(before)}`;
  where += ` AND "timeMs" >= ${bind(window.from)} AND "timeMs" < ${bind(window.to)}`;
  if (toSteps) where += ` AND "toStep" IN (${toSteps.map(bind).join(', ')})`;
  return `${where} AND "user" IS NOT NULL`;
}

export interface BulkMoveRow {
  seq: number;
  fromStep: string | null;
  toStep: string;
  bitmap: Uint8Array;
  count: number;
}

/** The next `limit` bulk moves of the partition after seq `after` (into `toSteps` when given), in seq order. */
export async function bulkMovesAfter(
  database: Database,
  window: JournalPartitionWindow,
  toSteps: string[] | undefined,
  after: number,
  limit: number,
): Promise<BulkMoveRow[]> {
  const { numberColumn, table, withoutIndex } = database.dialect;
  // Placeholders are bound in text order (SQLite's `?` are positional).
  const { params, bind } = database.dialect.parameters();
  const where =
    `WHERE "tenantId" = ${bind(window.tenantId)} AND "partition" = ${bind(window.partition)} AND "user" IS NULL AND "seq" > ${bind(after)}` +
    ` AND ${withoutIndex('"instanceId"')} = ${bind(window.instanceId)} AND "timeMs" >= ${bind(window.from)} AND "timeMs" < ${bind(window.to)}` +
    (toSteps ? ` AND "toStep" IN (${toSteps.map(bind).join(', ')})` : '');
  const rows: BulkMoveRow[] = [];
  await (await database.raw()).each(
    `SELECT ${numberColumn('seq')}, "fromStep", "toStep", "bitmap", ${numberColumn('count')} FROM ${table('Journal')} ${where}
     ORDER BY ${table('Journal')}."seq" LIMIT ${limit}`,
    params,
    (row) => {
      const [seq, fromStep, toStep, bitmap, count] = row as [number, string | null, string, Uint8Array, number];
      rows.push({ seq, fromStep, toStep, bitmap, count });
    },
  );
  return rows;
}
