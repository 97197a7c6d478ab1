// Rows keyed by shard (instance, partition) written or deleted for many shards in one statement: a timer firing over
// 1,000 tenants checkpoints 8,000 shards, and three statements per shard made 24,000 round trips on PostgreSQL.
import type { RawStatement } from '../raw';
import type { Database } from '../database';

export interface ShardKey {
  instanceId: string;
  partition: number;
}

/** A shard's row with its instance's tenant, which every statement on these tables names (docs/SCALING.md). */
export type OfTenant<Row> = Row & { tenantId: string };

/** Rows per multi-row statement: a few parameters each, well under SQLite's and PostgreSQL's bind limits. */
const ROWS_PER_STATEMENT = 500;

/**
 * A statement's bound bytes at most (one row may exceed it alone): node-pg builds a statement's whole Bind message
 * synchronously, growing one buffer by copies, so 20 MB of checkpoints in one statement held the thread 328 ms.
 */
export const BYTES_PER_STATEMENT = 1024 * 1024;

/**
 * The rows in order, cut into chunks in which no shard repeats: PostgreSQL refuses an `ON CONFLICT DO UPDATE` that
 * would touch one row twice, and statements run in order, so a shard's later row still wins. `bytesOf` bounds a
 * chunk's bound bytes to BYTES_PER_STATEMENT.
 */
export function uniqueShardChunks<Row extends ShardKey>(rows: Row[], bytesOf: (row: Row) => number = () => 0): Row[][] {
  const chunks: Row[][] = [];
  let chunk: Row[] = [];
  let bytes = 0;
  let seen = new Set<string>();
  for (const row of rows) {
    const key = `${row.partition}:${row.instanceId}`;
    const size = bytesOf(row);
    if (chunk.length > 0 && (seen.has(key) || chunk.length === ROWS_PER_STATEMENT || bytes + size > BYTES_PER_STATEMENT)) {
      chunks.push(chunk);
      chunk = [];
      bytes = 0;
      seen = new Set();
    }
    seen.add(key);
    chunk.push(row);
    bytes += size;
  }
  if (chunk.length > 0) chunks.push(chunk);
  return chunks;
}

/** Deletes the table's rows of every given shard, the shards bound as one JSON array. */
export function deleteShardRows(database: Database, table: 'Conversion' | 'ShardTimerPlan', shards: OfTenant<ShardKey>[]): RawStatement {
  const { params, bind } = database.dialect.parameters();
  const j = database.dialect.jsonArrayRows(bind(JSON.stringify(shards.map((shard) => [shard.tenantId, shard.instanceId, shard.partition]))));
  return {
    sql: `DELETE FROM ${database.dialect.table(table)} WHERE ("tenantId", "instanceId", "partition") IN (SELECT ${j.field(0)}, ${j.field(1)}, ${j.field(2, 'int')} FROM ${j.from})`,
    params,
  };
}
