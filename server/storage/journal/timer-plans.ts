// Timer plans (ShardTimerPlan rows): the next firing of each timer step of a shard, written by a timer tick that moved
// nobody in the partition. Such a tick changes nothing the journal carries, only when the step fires next, and
// before these rows it committed a checkpoint of the whole shard to make that durable: megabytes for a few numbers on
// every firing of an empty timer step beside a large crowd (2.5 MB per partition of a 10M-user instance). A row is
// written with journalSeq = the tenant's max seq, so recovery applies it where it falls among the replayed moves; the
// next checkpoint of the shard includes the plan and deletes the row.
import { num } from './row-number';
import type { RawStatement } from '../raw';
import type { Database } from '../database';
import { tenantMaxSeqSql } from './max-seq';
import { deleteShardRows, type OfTenant, uniqueShardChunks, type ShardKey } from './shard-rows';

export interface TimerPlanWrite {
  instanceId: string;
  partition: number;
  /** Every timer step's next firing in the shard (epoch ms). */
  cronNext: Record<string, number>;
}

export interface TimerPlan {
  /** The last journal seq committed before the plan was made: moves after it came after the plan. */
  journalSeq: number;
  cronNext: Record<string, number>;
}

/**
 * The plans as multi-row statements (a timer firing over many tenants writes thousands), each plan including every
 * journal row committed before it in this transaction: journalSeq = the tenant's max seq.
 */
export function writeTimerPlans(database: Database, plans: OfTenant<TimerPlanWrite>[]): RawStatement[] {
  const t = database.dialect.table('ShardTimerPlan');
  return uniqueShardChunks(plans).map((chunk) => {
    const { params, bind } = database.dialect.parameters();
    const rows = chunk.map(
      (plan) =>
        `(${bind(plan.tenantId)}, ${bind(plan.instanceId)}, ${bind(plan.partition)}, ${tenantMaxSeqSql(database, bind(plan.tenantId))}, ${bind(JSON.stringify(plan.cronNext))})`,
    );
    return {
      sql: `INSERT INTO ${t} ("tenantId", "instanceId", "partition", "journalSeq", "cronNext") VALUES ${rows.join(', ')}
       ON CONFLICT ("tenantId", "instanceId", "partition") DO UPDATE SET "journalSeq" = excluded."journalSeq", "cronNext" = excluded."cronNext"`,
      params,
    };
  });
}

/** With checkpoints of the shards, in the same transaction: the checkpoints hold the plans now. */
export function deleteTimerPlans(database: Database, shards: OfTenant<ShardKey>[]): RawStatement {
  return deleteShardRows(database, 'ShardTimerPlan', shards);
}

/** The plans of the given partitions of one instance written since their checkpoints (absent partitions have none). */
export async function loadTimerPlans(database: Database, tenantId: string, instanceId: string, partitions: number[]): Promise<Map<number, TimerPlan>> {
  const { params, bind } = database.dialect.parameters();
  const rows = await (await database.raw()).query<{ partition: unknown; journalSeq: unknown; cronNext: string }>(
    `SELECT "partition", "journalSeq", "cronNext" FROM ${database.dialect.table('ShardTimerPlan')}
     WHERE "tenantId" = ${bind(tenantId)} AND "instanceId" = ${bind(instanceId)} AND "partition" IN (${partitions.map(bind).join(', ')})`,
    params,
  );
  return new Map(rows.map((row) => [num(row.partition), { journalSeq: num(row.journalSeq), cronNext: JSON.parse(row.cronNext) }]));
}
