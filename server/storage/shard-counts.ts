// The counts cluster members publish for the partitions they hold (server/cluster/counts.ts decides what and when):
// ShardCounts has one row per instance and partition, stamped with the lease epoch and a version, and every change
// is announced on the cluster channel in the same transaction, so a member that hears of a figure can read it.
import type { Database } from './database';
import type { RawStatement } from './raw';

/** A ShardCounts row to write; `counts` is the figure's JSON. */
export type ShardFigureRow = [tenantId: string, instanceId: string, partition: number, epoch: number, version: number, counts: string];

export interface ShardCountsPublication {
  /** Instances no longer running: their rows go. */
  stopped: { tenantId: string; instanceId: string }[];
  /** Kept only where newer than the row there (a higher epoch, or the same epoch and a higher version). */
  figures: ShardFigureRow[];
  /** Announced on `channel` once the rows are committed. */
  notices: string[];
}

/** Writes a publication and its notices in one transaction (one multi-row upsert, one statement of NOTIFYs). */
export async function publishShardCounts(database: Database, channel: string, { stopped, figures, notices }: ShardCountsPublication): Promise<void> {
  const { dialect } = database;
  const t = dialect.table('ShardCounts');
  const statements: RawStatement[] = stopped.map(({ tenantId, instanceId }) => {
    const { params, bind } = dialect.parameters();
    return { sql: `DELETE FROM ${t} WHERE "tenantId" = ${bind(tenantId)} AND "instanceId" = ${bind(instanceId)}`, params };
  });
  if (figures.length > 0) {
    const { params, bind } = dialect.parameters();
    const j = dialect.jsonArrayRows(bind(JSON.stringify(figures)));
    statements.push({
      sql: `INSERT INTO ${t} ("tenantId", "instanceId", "partition", "epoch", "version", "counts")
          SELECT ${j.field(0)}, ${j.field(1)}, ${j.field(2, 'int')}, ${j.field(3, 'int')}, ${j.field(4, 'bigint')}, ${j.field(5)} FROM ${j.from}
          ON CONFLICT ("tenantId", "instanceId", "partition") DO UPDATE SET "epoch" = excluded."epoch", "version" = excluded."version", "counts" = excluded."counts"
          WHERE ${t}."epoch" < excluded."epoch" OR (${t}."epoch" = excluded."epoch" AND ${t}."version" < excluded."version")`,
      params,
    });
  }
  statements.push({ sql: 'SELECT pg_notify($1, "payload") FROM unnest($2::text[]) AS "payload"', params: [channel, notices] });
  await (await database.raw()).transaction(statements);
}

/** A published figure as read back; `counts` is its JSON. */
export interface ShardFigure {
  partition: number;
  epoch: number;
  version: number;
  counts: string;
}

/** The instance's published figures and its tenant's partition count; undefined when either is missing. */
export async function readShardFigures(
  database: Database,
  tenantId: string,
  instanceId: string,
): Promise<{ partitions: number; figures: ShardFigure[] } | undefined> {
  const connection = await database.raw();
  const { dialect } = database;
  const ofTenant = dialect.parameters();
  const [tenant] = await connection.query<{ partitions: number }>(
    `SELECT "partitions" FROM ${dialect.table('Tenant')} WHERE "id" = ${ofTenant.bind(tenantId)}`,
    ofTenant.params,
  );
  const { params, bind } = dialect.parameters();
  const rows = await connection.query<{ partition: number; epoch: number; version: unknown; counts: string }>(
    `SELECT "partition", "epoch", "version", "counts" FROM ${dialect.table('ShardCounts')} WHERE "tenantId" = ${bind(tenantId)} AND "instanceId" = ${bind(instanceId)}`,
    params,
  );
  if (!tenant || rows.length === 0) return undefined;
  return { partitions: tenant.partitions, figures: rows.map((row) => ({ ...row, version: Number(row.version) })) };
}

/** The published counts (JSON) of the instance's partitions, by partition. */
export async function readPublishedCounts(database: Database, tenantId: string, instanceId: string): Promise<Map<number, string>> {
  const { params, bind } = database.dialect.parameters();
  const rows = await (await database.raw()).query<{ partition: number; counts: string }>(
    `SELECT "partition", "counts" FROM ${database.dialect.table('ShardCounts')} WHERE "tenantId" = ${bind(tenantId)} AND "instanceId" = ${bind(instanceId)}`,
    params,
  );
  return new Map(rows.map((row) => [Number(row.partition), row.counts]));
}
