// A user's recent moves for "where is user U": the journal rows naming the user (moves its own events caused) and
// the bulk rows holding it in their bitmap (entering at start, delays, branch timeouts, ttl, timers, version
// mappings). Bulk rows carry no user column, so they are searched newest first within the user's partition only.
import { RoaringBitmap32 } from '../../crowd/bitmap';
import { dialect } from '../../storage/dialect';
import { raw } from '../../storage/raw';
import type { UserMove } from '../types';
import { num } from './row-number';

export const RECENT_MOVES = 50;
/** How many of the partition's newest bulk rows are searched for the user (bounds the bitmap bytes one call reads). */
export const BULK_ROWS_SEARCHED = 500;
const BULK_PAGE = 25;

type MoveRow = { seq: unknown; instanceId: string; fromStep: string | null; toStep: string; timeMs: unknown };

const toMove = (row: MoveRow): UserMove => ({
  seq: num(row.seq),
  instanceId: row.instanceId,
  fromStep: row.fromStep,
  toStep: row.toStep,
  time: new Date(num(row.timeMs)).toISOString(),
});

/** The user's newest RECENT_MOVES moves of every kind, newest first. */
export async function recentMovesOf(tenantId: string, user: number, partition: number): Promise<UserMove[]> {
  const rawDb = await raw();
  const table = dialect().table('Journal');
  const columns = `${dialect().numberColumn('seq')}, "instanceId", "fromStep", "toStep", ${dialect().numberColumn('timeMs')}`;
  const own = dialect().parameters();
  const ownRows = await rawDb.query<MoveRow>(
    `SELECT ${columns} FROM ${table} WHERE "tenantId" = ${own.bind(tenantId)} AND "user" = ${own.bind(user)} ORDER BY "seq" DESC LIMIT ${own.bind(RECENT_MOVES)}`,
    own.params,
  );
  const moves = ownRows.map(toMove);
  // Bulk rows older than the oldest own move cannot make the newest RECENT_MOVES once that many own moves are found.
  const floor = moves.length === RECENT_MOVES ? moves[moves.length - 1].seq : 0;
  let before = Number.MAX_SAFE_INTEGER;
  for (let searched = 0; searched < BULK_ROWS_SEARCHED; searched += BULK_PAGE) {
    const page = dialect().parameters();
    const rows = await rawDb.query<MoveRow & { bitmap: Uint8Array }>(
      `SELECT ${columns}, "bitmap" FROM ${table}
       WHERE "tenantId" = ${page.bind(tenantId)} AND "partition" = ${page.bind(partition)} AND "user" IS NULL AND "seq" < ${page.bind(before)} AND "seq" > ${page.bind(floor)}
       ORDER BY "seq" DESC LIMIT ${page.bind(BULK_PAGE)}`,
      page.params,
    );
    for (const row of rows) if (RoaringBitmap32.deserialize(row.bitmap, 'portable').has(user)) moves.push(toMove(row));
    if (rows.length < BULK_PAGE) break;
    before = num(rows[rows.length - 1].seq);
    if (moves.filter((move) => move.seq > before).length >= RECENT_MOVES) break;
  }
  return moves.sort((a, b) => b.seq - a.seq).slice(0, RECENT_MOVES);
}
