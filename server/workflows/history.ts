import type { Tx } from '../storage/db';

/** Rows per IN list: well under SQLite's bound-parameter limit however many instances a workflow ran. */
const IDS_PER_STATEMENT = 1000;

/**
 * Removes instances with their history snapshots, shard checkpoints, timer plans and crowd changes, inside the
 * caller's transaction. The caller has checked that none of them is active (the engine would still write to an active one).
 */
export async function removeInstances(tx: Tx, tenantId: string, instanceIds: string[]): Promise<void> {
  for (let i = 0; i < instanceIds.length; i += IDS_PER_STATEMENT) {
    const ids = instanceIds.slice(i, i + IDS_PER_STATEMENT);
    await tx.shardCheckpoint.deleteMany({ where: { instanceId: { in: ids } } });
    await tx.shardTimerPlan.deleteMany({ where: { instanceId: { in: ids } } });
    await tx.crowdChange.deleteMany({ where: { instanceId: { in: ids } } });
    await tx.instanceSnapshot.deleteMany({ where: { tenantId, instanceId: { in: ids } } });
    await tx.instance.deleteMany({ where: { tenantId, id: { in: ids } } });
  }
}
