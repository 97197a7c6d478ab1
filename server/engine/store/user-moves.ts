// A user's recent moves for "where is user U": the journal rows naming the user (moves its own events caused) and
// the bulk rows holding it in their bitmap (entering at start, delays, branch timeouts, ttl, timers, version
// mappings). Bulk rows carry no user column, so they are searched newest first within the user's partition only.
import { portableContains } from '../../crowd/portable-contains';
import type { UserMove } from '../types';
import { num } from '../../storage/journal/row-number';
import type { Database } from '../../storage/database';

export const RECENT_MOVES = 50;
/** Bulk rows read per query: bounds the bitmap bytes one read holds, and how long one slice of the search takes. */
const BULK_PAGE = 25;
/**
 * What one search reads of the bulk rows at most. A timer moving a crowd every second writes 86,400 bulk rows a day
 * per partition, and a user with few moves would otherwise have every one of them read (gigabytes of bitmaps).
 */
export type BulkSearchLimit = { rows: number; bytes: number };
export const BULK_SEARCH_LIMIT: BulkSearchLimit = { rows: 10_000, bytes: 64 * 1024 * 1024 };

/** `complete` false: the search stopped at its limit, and bulk moves at or before `searchedBackTo` were not looked at. */
export type RecentMoves = { moves: UserMove[]; complete: boolean; searchedBackTo?: number };

type MoveRow = { seq: unknown; instanceId: string; fromStep: string | null; toStep: string; timeMs: unknown };

const toMove = (row: MoveRow): UserMove => ({
  seq: num(row.seq),
  instanceId: row.instanceId,
  fromStep: row.fromStep,
  toStep: row.toStep,
  time: new Date(num(row.timeMs)).toISOString(),
});

/**
 * The user's newest RECENT_MOVES moves of every kind, newest first. The bulk rows of the partition are read newest
 * first through their partial index (`"user" IS NULL`, migration journal_bulk_moves_index) a page at a time, letting
 * other work of the thread run between pages, until nothing older can make the list or the search reaches `limit`;
 * each bitmap is asked about the user in place (portableContains), not deserialized.
 */
export async function recentMovesOf(database: Database, tenantId: string, user: number, partition: number, limit = BULK_SEARCH_LIMIT): Promise<RecentMoves> {
  const rawDb = await database.raw();
  const table = database.dialect.table('Journal');
  const columns = `${database.dialect.numberColumn('seq')}, "instanceId", "fromStep", "toStep", ${database.dialect.numberColumn('timeMs')}`;
  const own = database.dialect.parameters();
  const ownRows = await rawDb.query<MoveRow>(
    `SELECT ${columns} FROM ${table} WHERE "tenantId" = ${own.bind(tenantId)} AND "user" = ${own.bind(user)} ORDER BY ${table}."seq" DESC LIMIT ${own.bind(RECENT_MOVES)}`,
    own.params,
  );
  const moves = ownRows.map(toMove);
  // Bulk rows older than the oldest own move cannot make the newest RECENT_MOVES once that many own moves are found.
  const floor = moves.length === RECENT_MOVES ? moves[moves.length - 1].seq : 0;
  let before = Number.MAX_SAFE_INTEGER;
  const read = { rows: 0, bytes: 0 };
  let complete = true;
  for (;;) {
    const page = database.dialect.parameters();
    const rows = await rawDb.query<MoveRow & { bitmap: Uint8Array }>(
      `SELECT ${columns}, "bitmap" FROM ${table}
       WHERE "tenantId" = ${page.bind(tenantId)} AND "partition" = ${page.bind(partition)} AND "user" IS NULL AND "seq" < ${page.bind(before)} AND "seq" > ${page.bind(floor)}
       ORDER BY ${table}."seq" DESC LIMIT ${page.bind(BULK_PAGE)}`,
      page.params,
    );
    for (const row of rows) {
      if (portableContains(row.bitmap, user)) moves.push(toMove(row));
      read.rows++;
      read.bytes += row.bitmap.byteLength;
    }
    if (rows.length < BULK_PAGE) break;
    before = num(rows[rows.length - 1].seq);
    // Every row still unread is older than `before`: once RECENT_MOVES moves newer than it are known, none can enter.
    if (moves.filter((move) => move.seq > before).length >= RECENT_MOVES) break;
    if (read.rows >= limit.rows || read.bytes >= limit.bytes) {
      complete = false;
      break;
    }
    await new Promise((resolve) => setImmediate(resolve));
  }
  const newest = moves.sort((a, b) => b.seq - a.seq).slice(0, RECENT_MOVES);
  return complete ? { moves: newest, complete } : { moves: newest, complete, searchedBackTo: before };
}
