// The partitioned input log (EventLog) past its appends (./event-log-append.ts): rows after an offset, the newest rows,
// each partition's end and applied offset, and the hourly trim of applied rows.
import type { Database } from './database';
import { num } from './journal/row-number';

/** A log row as stored: its events encoded (server/engine/log-codec.ts). */
export type StoredLogRow = { offset: number; events: Uint8Array };

/** Up to `limit` log rows of one partition after `offset`, in offset order. */
export async function logRowsAfter(database: Database, tenantId: string, partition: number, offset: number, limit: number): Promise<StoredLogRow[]> {
  const { params, bind } = database.dialect.parameters();
  const sql = `SELECT "offset", "events" FROM ${database.dialect.table('EventLog')}
    WHERE "tenantId" = ${bind(tenantId)} AND "partition" = ${bind(partition)} AND "offset" > ${bind(offset)} ORDER BY "offset" LIMIT ${bind(limit)}`;
  const rows = await (await database.raw()).query<{ offset: unknown; events: Uint8Array }>(sql, params);
  return rows.map((row) => ({ offset: num(row.offset), events: row.events }));
}

/** The newest `limit` log rows of one partition, newest first: their encoded events and when each was appended. */
export async function newestLogRows(
  database: Database,
  tenantId: string,
  partition: number,
  limit: number,
): Promise<{ events: Uint8Array | string; createdAtMs: number }[]> {
  const { params, bind } = database.dialect.parameters();
  const rows = await (await database.raw()).query<{ events: Uint8Array | string; createdAt: unknown }>(
    `SELECT "events", "createdAt" FROM ${database.dialect.table('EventLog')}
        WHERE "tenantId" = ${bind(tenantId)} AND "partition" = ${bind(partition)} ORDER BY "offset" DESC LIMIT ${bind(limit)}`,
    params,
  );
  return rows.map((row) => ({ events: row.events, createdAtMs: timeOf(row.createdAt) }));
}

/** SQLite gives CURRENT_TIMESTAMP as "YYYY-MM-DD HH:MM:SS" (UTC); PostgreSQL gives a Date. */
function timeOf(value: unknown): number {
  return value instanceof Date ? value.getTime() : Date.parse(`${String(value).replace(' ', 'T')}Z`);
}

/** The last offset ingest wrote for each partition of the tenant. */
export async function logEnds(database: Database, tenantId: string): Promise<Map<number, number>> {
  const { params, bind } = database.dialect.parameters();
  const rows = await (await database.raw()).query<{ partition: unknown; last: unknown }>(
    `SELECT "partition", MAX("offset") AS "last" FROM ${database.dialect.table('EventLog')} WHERE "tenantId" = ${bind(tenantId)} GROUP BY "partition"`,
    params,
  );
  return new Map(rows.map((row) => [num(row.partition), num(row.last)]));
}

/** Rows deleted per statement when trimming the log, so no single statement holds the write lock for long. */
const TRIM_ROWS_PER_STATEMENT = 500;

/** Each partition's committed offset (what it has applied of the log). */
export async function appliedOffsets(database: Database, tenantId: string): Promise<Map<number, number>> {
  const { params, bind } = database.dialect.parameters();
  const rows = await (await database.raw()).query<{ partition: unknown; offset: unknown }>(
    `SELECT "partition", "offset" FROM ${database.dialect.table('PartitionState')} WHERE "tenantId" = ${bind(tenantId)}`,
    params,
  );
  return new Map(rows.map((row) => [num(row.partition), num(row.offset)]));
}

/**
 * Deletes the tenant's log rows up to `upTo` (offsets per partition) that are also applied: a partition resumes after
 * its committed offset, so it never reads them again. The newest row of each partition stays, because ingest numbers
 * the next row from it. Returns the number of rows deleted.
 */
export async function trimLog(database: Database, tenantId: string, upTo: Map<number, number>): Promise<number> {
  const rawDb = await database.raw();
  const read = database.dialect.parameters();
  const partitions = await rawDb.query<{ partition: unknown; first: unknown; last: unknown; applied: unknown }>(
    `SELECT e."partition", MIN(e."offset") AS "first", MAX(e."offset") AS "last", p."offset" AS "applied"
     FROM ${database.dialect.table('EventLog')} e JOIN ${database.dialect.table('PartitionState')} p ON p."tenantId" = e."tenantId" AND p."partition" = e."partition"
     WHERE e."tenantId" = ${read.bind(tenantId)} GROUP BY e."partition", p."offset"`,
    read.params,
  );
  let deleted = 0;
  for (const row of partitions) {
    const partition = num(row.partition);
    const end = Math.min((upTo.get(partition) ?? 0) + 1, num(row.applied) + 1, num(row.last)); // exclusive
    for (let from = num(row.first); from < end; from += TRIM_ROWS_PER_STATEMENT) {
      const { params, bind } = database.dialect.parameters();
      deleted += await rawDb.execute(
        `DELETE FROM ${database.dialect.table('EventLog')}
          WHERE "tenantId" = ${bind(tenantId)} AND "partition" = ${bind(partition)} AND "offset" >= ${bind(from)} AND "offset" < ${bind(Math.min(from + TRIM_ROWS_PER_STATEMENT, end))}`,
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

  constructor(private readonly database: Database) {}

  async run(tenantId: string): Promise<number> {
    const applied = await appliedOffsets(this.database, tenantId);
    const previous = this.marks.get(tenantId);
    this.marks.set(tenantId, applied);
    return previous ? trimLog(this.database, tenantId, previous) : 0;
  }
}
