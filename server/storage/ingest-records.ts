// IngestRecord rows past their appends (./event-log-append.ts writes them with the log rows): what other processes
// recorded since a seq, and the expiry of rows older than the dedupe window (server/engine/ingest-dedupe.ts decides
// when and keeps the same rows in memory).
import type { Database } from './database';
import type { IngestRecordRow } from './event-log-append';

/** A record as read back: rows written before the ids' hashes were stored hold the ids' JSON (`eventIds`) instead. */
export type StoredIngestRecord = IngestRecordRow & { eventIds: string | null };

type StoredRow = {
  seq: number | string;
  key: string | null;
  requestHash: string | null;
  accepted: number;
  duplicates: number;
  eventIds: string | null;
  eventHashes: Uint8Array | null;
  createdAtMs: number | string;
};

/** The tenant's records after `seq`, in seq order. */
export async function ingestRecordsAfter(database: Database, tenantId: string, seq: number): Promise<StoredIngestRecord[]> {
  const { params, bind } = database.dialect.parameters();
  const columns = '"seq", "key", "requestHash", "accepted", "duplicates", "eventIds", "eventHashes", "createdAtMs"';
  const sql = `SELECT ${columns} FROM ${database.dialect.table('IngestRecord')}
      WHERE "tenantId" = ${bind(tenantId)} AND "seq" > ${bind(seq)} ORDER BY "seq"`;
  const rows = await (await database.raw()).query<StoredRow>(sql, params);
  return rows.map((row) => ({
    seq: Number(row.seq),
    key: row.key,
    requestHash: row.requestHash,
    accepted: Number(row.accepted),
    duplicates: Number(row.duplicates),
    eventIds: row.eventIds,
    eventHashes: row.eventHashes && new Uint8Array(row.eventHashes),
    createdAtMs: Number(row.createdAtMs),
  }));
}

/**
 * Deletes the tenant's records made before `cutoff` below seq `lastSeq` (the newest stays: seqs continue from it),
 * then clears the key and ids of the old ones left.
 */
export async function expireIngestRecords(database: Database, tenantId: string, cutoff: number, lastSeq: number): Promise<void> {
  const table = database.dialect.table('IngestRecord');
  const rawDb = await database.raw();
  const removed = database.dialect.parameters();
  await rawDb.execute(
    `DELETE FROM ${table} WHERE "tenantId" = ${removed.bind(tenantId)} AND "createdAtMs" < ${removed.bind(cutoff)} AND "seq" < ${removed.bind(lastSeq)}`,
    removed.params,
  );
  const kept = database.dialect.parameters();
  await rawDb.execute(
    `UPDATE ${table} SET "key" = NULL, "eventIds" = NULL, "eventHashes" = NULL WHERE "tenantId" = ${kept.bind(tenantId)} AND "createdAtMs" < ${kept.bind(cutoff)}`,
    kept.params,
  );
}
