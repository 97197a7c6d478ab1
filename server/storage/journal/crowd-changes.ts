// CrowdChange rows: what a crowd update changed in each shard, for point-in-time reads (server/engine/crowd-changes.ts
// says why they exist and what their bytes hold). Written in the update's transaction after the journal rows they
// follow; read by instance and partition, in the order they were made.
import type { Database } from '../database';
import type { RawStatement } from '../raw';
import { tenantMaxSeqSql } from './max-seq';
import { num } from './row-number';

/** A stored change: its shard's partition, its tenant's max journal seq at the update, when it was made, and its bytes. */
export type CrowdChangeRow = { partition: number; journalSeq: number; timeMs: number; data: Uint8Array };

/** A shard's change to record: its bytes as server/engine/crowd-changes.ts encodes them. */
export type CrowdChangeWrite = { instanceId: string; partition: number; timeMs: number; data: Buffer };

/** Records each shard's change in the update's transaction (./commit.ts), after the journal rows it follows. */
export function crowdChangeInserts(database: Database, tenantId: string, changes: CrowdChangeWrite[]): RawStatement[] {
  return changes.map(({ instanceId, partition, timeMs, data }) => {
    const { params, bind } = database.dialect.parameters();
    const sql = `INSERT INTO ${database.dialect.table('CrowdChange')} ("tenantId", "instanceId", "partition", "journalSeq", "timeMs", "data")
    SELECT ${bind(tenantId)}, ${bind(instanceId)}, ${bind(partition)}, ${tenantMaxSeqSql(database, bind(tenantId))}, ${bind(timeMs)}, ${bind(data)}`;
    return { sql, params };
  });
}

/** Per partition of one instance: how many changes it has recorded, and when the first was made. */
export async function crowdChangeCounts(database: Database, tenantId: string, instanceId: string): Promise<Map<number, { count: number; firstMs: number }>> {
  const { params, bind } = database.dialect.parameters();
  const rows = await (await database.raw()).query<{ partition: unknown; count: unknown; firstMs: unknown }>(
    `SELECT "partition", COUNT(*) AS "count", MIN("timeMs") AS "firstMs" FROM ${database.dialect.table('CrowdChange')}
     WHERE "tenantId" = ${bind(tenantId)} AND "instanceId" = ${bind(instanceId)} GROUP BY "partition"`,
    params,
  );
  return new Map(rows.map((row) => [num(row.partition), { count: num(row.count), firstMs: num(row.firstMs) }]));
}

/** The changes of the given shards of one instance made in (`afterMs`, `untilMs`], in the order they were made. */
export async function crowdChangeRows(
  database: Database,
  tenantId: string,
  instanceId: string,
  partitions: number[],
  afterMs: number,
  untilMs: number,
): Promise<CrowdChangeRow[]> {
  const { params, bind } = database.dialect.parameters();
  const { numberColumn, table } = database.dialect;
  // Placeholders are bound in text order (SQLite's `?` are positional).
  const shards = `"tenantId" = ${bind(tenantId)} AND "instanceId" = ${bind(instanceId)} AND "partition" IN (${partitions.map(bind).join(', ')})`;
  const after = Number.isFinite(afterMs) ? ` AND "timeMs" > ${bind(afterMs)}` : '';
  const until = Number.isFinite(untilMs) ? ` AND "timeMs" <= ${bind(untilMs)}` : '';
  const rows = await (await database.raw()).query<{ partition: unknown; journalSeq: unknown; timeMs: unknown; data: Uint8Array }>(
    `SELECT "partition", ${numberColumn('journalSeq')}, ${numberColumn('timeMs')}, "data" FROM ${table('CrowdChange')}
     WHERE ${shards}${after}${until} ORDER BY "id"`,
    params,
  );
  return rows.map((row) => ({ partition: num(row.partition), journalSeq: num(row.journalSeq), timeMs: num(row.timeMs), data: row.data }));
}
