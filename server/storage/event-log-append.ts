// Appending to a tenant's event log (server/engine/ingest-commit.ts decides what): rows at each partition's next
// offsets and the ingest records of their Idempotency-Keys and event ids, all in one transaction, so an acknowledged
// batch is never lost and a failed one left no row. Two writers that take the same offset collide on the primary key
// (the caller decides again and retries).
import type { Database } from './database';
import type { Dialect } from './dialect';
import type { RawStatement } from './raw';

/** One EventLog row to write: a partition's encoded events (server/engine/log-codec.ts). */
export type LogRowToWrite = { partition: number; count: number; bytes: Buffer };

/** An IngestRecord row: what a batch was answered, under its key, and the hashes of the ids of the events it logged. */
export interface IngestRecordRow {
  seq: number;
  key: string | null;
  requestHash: string | null;
  eventHashes: Uint8Array<ArrayBuffer> | null;
  createdAtMs: number;
  accepted: number;
  duplicates: number;
}

/** Writes the rows and records in one transaction; returns each row's offset, in the order of `rows`. */
export function appendLogRows(database: Database, tenantId: string, rows: LogRowToWrite[], records: IngestRecordRow[]): Promise<number[]> {
  return (database.dialect.roundTripPerStatement ? insertAsOneStatement : insertRowByRow)(database, tenantId, rows, records);
}

/** A unique-key clash of an append: another writer took the log offset or the dedupe seq (or key) first. */
export function isAppendClash(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const { code, message } = error as { code?: string; message?: string };
  const text = `${code ?? ''} ${message ?? ''}`;
  return /23505|SQLITE_CONSTRAINT|UNIQUE constraint failed|duplicate key value/i.test(text);
}

/**
 * SQLite: one INSERT per row in one transaction (no round trips; each statement sees the rows before it). Each row
 * takes its partition's committed max offset + 1 (earlier rows of the same transaction included).
 */
async function insertRowByRow(database: Database, tenantId: string, rows: LogRowToWrite[], records: IngestRecordRow[]): Promise<number[]> {
  const eventLog = database.dialect.table('EventLog');
  const statements: RawStatement[] = rows.map(({ partition, count, bytes }) => {
    const { params, bind } = database.dialect.parameters();
    const offset = `(SELECT COALESCE(MAX("offset"), 0) + 1 FROM ${eventLog} WHERE "tenantId" = ${bind(tenantId)} AND "partition" = ${bind(partition)})`;
    const sql = `INSERT INTO ${eventLog} ("tenantId", "partition", "offset", "events", "count")
      VALUES (${bind(tenantId)}, ${bind(partition)}, ${offset}, ${bind(bytes)}, ${bind(count)}) RETURNING "offset"`;
    return { sql, params, returning: true };
  });
  if (records.length > 0) {
    const recordParameters = database.dialect.parameters();
    statements.push({ sql: recordInsert(database.dialect, tenantId, records, recordParameters.bind), params: recordParameters.params, returning: false });
  }
  if (statements.length === 0) return [];
  const results = await (await database.raw()).transaction(statements);
  return rows.map((_, i) => Number(results[i][0].offset));
}

/**
 * PostgreSQL: every row in ONE statement (one round trip, atomic without BEGIN/COMMIT), the dedupe records in a
 * data-modifying WITH of the same statement. A statement sees only the rows committed before it, so each row's offset
 * is its partition's max + its rank among this statement's rows; rows are in partition order so concurrent writers
 * lock in the same order, and one that took an offset first makes this statement fail on the primary key: retried.
 */
async function insertAsOneStatement(database: Database, tenantId: string, rows: LogRowToWrite[], records: IngestRecordRow[]): Promise<number[]> {
  const eventLog = database.dialect.table('EventLog');
  const rank = new Map<number, number>();
  const ranks = rows.map((row) => {
    const next = (rank.get(row.partition) ?? 0) + 1;
    rank.set(row.partition, next);
    return next;
  });
  const { params, bind } = database.dialect.parameters();
  const recorded = records.length > 0 ? recordInsert(database.dialect, tenantId, records, bind) : undefined;
  if (rows.length === 0) {
    if (recorded) await (await database.raw()).execute(recorded, params);
    return [];
  }
  const tenant = bind(tenantId);
  // Multi-row VALUES, not unnest(): the blobs then travel as binary parameters instead of one hex array literal.
  const values = rows.map((row, i) => {
    const partition = bind(row.partition);
    const offset = `COALESCE((SELECT MAX("offset") FROM ${eventLog} WHERE "tenantId" = ${tenant} AND "partition" = ${partition}), 0) + ${bind(ranks[i])}`;
    return `(${tenant}, ${partition}, ${offset}, ${bind(row.bytes)}, ${bind(row.count)})`;
  });
  const insert = `INSERT INTO ${eventLog} ("tenantId", "partition", "offset", "events", "count") VALUES ${values.join(', ')} RETURNING "partition", "offset"`;
  const sql = recorded ? `WITH recorded AS (${recorded}) ${insert}` : insert;
  const written = await (await database.raw()).query<{ partition: number; offset: string | number }>(sql, params);
  // Per partition the offsets are consecutive in rank order: the k-th smallest belongs to the row of rank k.
  const offsetsOf = new Map<number, number[]>();
  for (const row of written) {
    let offsets = offsetsOf.get(row.partition);
    if (!offsets) offsetsOf.set(row.partition, (offsets = []));
    offsets.push(Number(row.offset));
  }
  for (const offsets of offsetsOf.values()) offsets.sort((a, b) => a - b);
  return rows.map((row, i) => offsetsOf.get(row.partition)![ranks[i] - 1]);
}

/** The INSERT of new records for the group commit's statement; `bind` adds each value to that statement's parameters. */
function recordInsert(dialect: Dialect, tenantId: string, records: IngestRecordRow[], bind: (value: unknown) => string): string {
  const values = records.map(
    (r) =>
      `(${bind(tenantId)}, ${bind(r.seq)}, ${bind(r.key)}, ${bind(r.requestHash)}, ${bind(r.accepted)}, ${bind(r.duplicates)}, ${bind(r.eventHashes && Buffer.from(r.eventHashes.buffer, r.eventHashes.byteOffset, r.eventHashes.byteLength))}, ${bind(r.createdAtMs)})`,
  );
  return `INSERT INTO ${dialect.table('IngestRecord')} ("tenantId", "seq", "key", "requestHash", "accepted", "duplicates", "eventHashes", "createdAtMs") VALUES ${values.join(', ')}`;
}
