// Conversion rows (goal.ts): written in the commit of the batch that converted the users, deleted by the commit that
// checkpoints their shard (the checkpoint then holds them), read back by recovery. A user converts once per instance,
// so ORing every remaining row onto the checkpoint gives the shard's conversions whatever the rows' order.
import { RoaringBitmap32 } from '../../crowd/bitmap';
import type { RawStatement } from '../../storage/raw';
import type { Database } from '../../storage/database';
import { deleteShardRows, type ShardKey } from './shard-rows';

export interface ConversionWrite {
  instanceId: string;
  partition: number;
  step: string;
  bitmap: Uint8Array;
}

export function insertConversions(database: Database, rows: ConversionWrite[]): RawStatement[] {
  return rows.map((row) => {
    const { params, bind } = database.dialect.parameters();
    const bytes = Buffer.from(row.bitmap.buffer, row.bitmap.byteOffset, row.bitmap.byteLength);
    return {
      sql: `INSERT INTO ${database.dialect.table('Conversion')} ("instanceId", "partition", "step", "bitmap")
        VALUES (${bind(row.instanceId)}, ${bind(row.partition)}, ${bind(row.step)}, ${bind(bytes)})`,
      params,
    };
  });
}

/** With checkpoints of the shards, in the same transaction: the checkpoints hold these conversions now. */
export function deleteConversions(database: Database, shards: ShardKey[]): RawStatement {
  return deleteShardRows(database, 'Conversion', shards);
}

/** The conversions committed since the shard's checkpoint, by step. */
export async function conversionsAfterCheckpoint(database: Database, instanceId: string, partition: number): Promise<Map<string, RoaringBitmap32>> {
  const { params, bind } = database.dialect.parameters();
  const rows = await (await database.raw()).query<{ step: string; bitmap: Uint8Array }>(
    `SELECT "step", "bitmap" FROM ${database.dialect.table('Conversion')} WHERE "instanceId" = ${bind(instanceId)} AND "partition" = ${bind(partition)}`,
    params,
  );
  const byStep = new Map<string, RoaringBitmap32>();
  for (const row of rows) {
    const users = RoaringBitmap32.deserialize(row.bitmap, 'portable');
    const known = byStep.get(row.step);
    if (known) known.orInPlace(users);
    else byStep.set(row.step, users);
  }
  return byStep;
}
