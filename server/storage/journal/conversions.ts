// Conversion rows (server/engine/goal.ts): written in the commit of the batch that converted the users, deleted by the
// commit that checkpoints their shard (the checkpoint then holds them), read back by recovery.
import type { RawStatement } from '../raw';
import type { Database } from '../database';
import { deleteShardRows, type OfTenant, type ShardKey } from './shard-rows';

export interface ConversionWrite {
  instanceId: string;
  partition: number;
  step: string;
  bitmap: Uint8Array;
}

export type ConversionRow = { step: string; bitmap: Uint8Array };

export function insertConversions(database: Database, tenantId: string, rows: ConversionWrite[]): RawStatement[] {
  return rows.map((row) => {
    const { params, bind } = database.dialect.parameters();
    const bytes = Buffer.from(row.bitmap.buffer, row.bitmap.byteOffset, row.bitmap.byteLength);
    return {
      sql: `INSERT INTO ${database.dialect.table('Conversion')} ("tenantId", "instanceId", "partition", "step", "bitmap")
        VALUES (${bind(tenantId)}, ${bind(row.instanceId)}, ${bind(row.partition)}, ${bind(row.step)}, ${bind(bytes)})`,
      params,
    };
  });
}

/** With checkpoints of the shards, in the same transaction: the checkpoints hold these conversions now. */
export function deleteConversions(database: Database, shards: OfTenant<ShardKey>[]): RawStatement {
  return deleteShardRows(database, 'Conversion', shards);
}

/** The conversion rows committed since the shard's checkpoint: each a step and its users (portable roaring bytes). */
export async function conversionsAfterCheckpoint(database: Database, tenantId: string, instanceId: string, partition: number): Promise<ConversionRow[]> {
  const { params, bind } = database.dialect.parameters();
  return (await database.raw()).query<ConversionRow>(
    `SELECT "step", "bitmap" FROM ${database.dialect.table('Conversion')} WHERE "tenantId" = ${bind(tenantId)} AND "instanceId" = ${bind(instanceId)} AND "partition" = ${bind(partition)}`,
    params,
  );
}
