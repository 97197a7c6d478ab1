// Reads of partitions another member owns: an export or a where-is-user on any member sees every partition. A
// partition held here is read from memory; one held elsewhere is rebuilt from the database as its owner last
// committed it (its checkpoint plus the journal after it, ./recovery.ts), the same state the next owner
// would start from, so no request is forwarded and no member has to answer for another. Rebuilt shards are kept
// (./committed-cache.ts) and brought up to date by replaying only the journal rows committed since, so a lookup
// costs one indexed read of the new rows instead of a checkpoint decode and a replay.
import { RoaringBitmap32 } from '../crowd/bitmap';
import { loadDefinition } from './instance-store';
import { WorkflowRuntime } from './runtime';
import type { Shard } from './shard';
import { InstanceRuntime, type TenantRuntime } from './tenant';
import type { CommittedShards } from './committed-cache';
import type { Database } from '../storage/database';

/** The tenant's running instances as the database has them (runtimes this engine holds are reused). */
export async function committedInstances(tenant: TenantRuntime, kept: CommittedShards): Promise<InstanceRuntime[]> {
  const rows = await tenant.database.db.instance.findMany({ where: { tenantId: tenant.id, state: 'running' } });
  return Promise.all(rows.map((row) => tenant.instances.get(row.id) ?? committedInstance(tenant.database, row, tenant.partitions, kept)));
}

/** A running instance of another member's making: its workflow, no shards in memory. */
export function committedInstance(
  database: Database,
  row: { id: string; tenantId: string; workflowId: string; version: number; crowdName: string },
  partitions: number,
  kept: CommittedShards,
): Promise<InstanceRuntime> {
  return kept.instance(
    row,
    async () =>
      new InstanceRuntime(row, new WorkflowRuntime(await loadDefinition(database, row.tenantId, row.workflowId, row.version), row.workflowId), partitions),
  );
}

/** The partition's shard: this engine's own when it holds the partition, else as committed (kept in `kept`). */
export async function committedShard(instance: InstanceRuntime, partition: number, kept: CommittedShards): Promise<Shard> {
  return instance.shards[partition] ?? kept.shard(instance, partition);
}

/** The users at `step` (`exited`: who left the journey from it by its exit criteria) over every partition. */
export async function committedStepUsers(
  instance: InstanceRuntime,
  step: string,
  kept: CommittedShards,
  of: 'steps' | 'exited' = 'steps',
): Promise<RoaringBitmap32> {
  const parts: RoaringBitmap32[] = [];
  for (let p = 0; p < instance.shards.length; p++) {
    const bitmap = (await committedShard(instance, p, kept))[of].get(step);
    if (bitmap) parts.push(bitmap);
  }
  return RoaringBitmap32.orMany(parts);
}

/** The holdout group over every partition. */
export async function committedHoldout(instance: InstanceRuntime, kept: CommittedShards): Promise<RoaringBitmap32> {
  const parts: RoaringBitmap32[] = [];
  for (let p = 0; p < instance.shards.length; p++) parts.push((await committedShard(instance, p, kept)).holdout);
  return RoaringBitmap32.orMany(parts);
}
