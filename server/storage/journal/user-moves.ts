// The journal reads of "where is user U" (server/engine/user-moves.ts searches with them): the rows naming the user,
// and the bulk rows of the user's partition, newest first, through their partial index (`"user" IS NULL`, migration
// journal_bulk_moves_index), since bulk rows carry no user column.
import type { Database } from '../database';
import { num } from './row-number';

/** A journal row as the search shows it. */
export type StoredUserMove = { seq: number; instanceId: string; fromStep: string | null; toStep: string; timeMs: number };

type MoveRow = { seq: unknown; instanceId: string; fromStep: string | null; toStep: string; timeMs: unknown };

const columns = (database: Database) =>
  `${database.dialect.numberColumn('seq')}, "instanceId", "fromStep", "toStep", ${database.dialect.numberColumn('timeMs')}`;

const stored = (row: MoveRow): StoredUserMove => ({
  seq: num(row.seq),
  instanceId: row.instanceId,
  fromStep: row.fromStep,
  toStep: row.toStep,
  timeMs: num(row.timeMs),
});

/** The newest `limit` journal rows of the tenant naming the user (moves its own events caused), newest first. */
export async function movesNamingUser(database: Database, tenantId: string, user: number, limit: number): Promise<StoredUserMove[]> {
  const table = database.dialect.table('Journal');
  const { params, bind } = database.dialect.parameters();
  const rows = await (await database.raw()).query<MoveRow>(
    `SELECT ${columns(database)} FROM ${table} WHERE "tenantId" = ${bind(tenantId)} AND "user" = ${bind(user)} ORDER BY ${table}."seq" DESC LIMIT ${bind(limit)}`,
    params,
  );
  return rows.map(stored);
}

/** Up to `limit` bulk rows of the partition with floor < seq < before, newest first, with their bitmaps. */
export async function bulkMovesBefore(
  database: Database,
  tenantId: string,
  partition: number,
  before: number,
  floor: number,
  limit: number,
): Promise<(StoredUserMove & { bitmap: Uint8Array })[]> {
  const table = database.dialect.table('Journal');
  const { params, bind } = database.dialect.parameters();
  const rows = await (await database.raw()).query<MoveRow & { bitmap: Uint8Array }>(
    `SELECT ${columns(database)}, "bitmap" FROM ${table}
       WHERE "tenantId" = ${bind(tenantId)} AND "partition" = ${bind(partition)} AND "user" IS NULL AND "seq" < ${bind(before)} AND "seq" > ${bind(floor)}
       ORDER BY ${table}."seq" DESC LIMIT ${bind(limit)}`,
    params,
  );
  return rows.map((row) => ({ ...stored(row), bitmap: row.bitmap }));
}
