// A user's recent moves for "where is user U": the journal rows naming the user (moves its own events caused) and
// the bulk rows holding it in their bitmap (entering at start, delays, branch timeouts, ttl, timers, version
// mappings). Bulk rows carry no user column, so they are searched newest first within the user's partition only.
import { portableContains } from '../crowd/portable-contains';
import type { Database } from '../storage/database';
import { bulkMovesBefore, movesNamingUser, type StoredUserMove } from '../storage/journal/user-moves';
import type { UserMove } from './types';

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

const toMove = (row: StoredUserMove): UserMove => ({
  seq: row.seq,
  instanceId: row.instanceId,
  fromStep: row.fromStep,
  toStep: row.toStep,
  time: new Date(row.timeMs).toISOString(),
});

/**
 * The user's newest RECENT_MOVES moves of every kind, newest first. The bulk rows of the partition are read newest
 * first through their partial index (`"user" IS NULL`, migration journal_bulk_moves_index) a page at a time, letting
 * other work of the thread run between pages, until nothing older can make the list or the search reaches `limit`;
 * each bitmap is asked about the user in place (portableContains), not deserialized.
 */
export async function recentMovesOf(database: Database, tenantId: string, user: number, partition: number, limit = BULK_SEARCH_LIMIT): Promise<RecentMoves> {
  const moves = (await movesNamingUser(database, tenantId, user, RECENT_MOVES)).map(toMove);
  // Bulk rows older than the oldest own move cannot make the newest RECENT_MOVES once that many own moves are found.
  const floor = moves.length === RECENT_MOVES ? moves[moves.length - 1].seq : 0;
  let before = Number.MAX_SAFE_INTEGER;
  const read = { rows: 0, bytes: 0 };
  let complete = true;
  for (;;) {
    const rows = await bulkMovesBefore(database, tenantId, partition, before, floor, BULK_PAGE);
    for (const row of rows) {
      if (portableContains(row.bitmap, user)) moves.push(toMove(row));
      read.rows++;
      read.bytes += row.bitmap.byteLength;
    }
    if (rows.length < BULK_PAGE) break;
    before = rows[rows.length - 1].seq;
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
