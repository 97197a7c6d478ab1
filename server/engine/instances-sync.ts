// In a cluster another member may have started, stopped or changed an instance while this one held none of the
// tenant's partitions (an instance operation gathers them all on the member running it). So a member taking a
// partition first brings its list of the tenant's running instances up to the database, then loads the shards.
import { loadDefinition } from './instance-store';
import { WorkflowRuntime } from './runtime';
import { InstanceRuntime, type TenantRuntime } from './tenant';
import { ACTIVE_INSTANCE_STATES } from '../tenants/tenants';

export async function syncRunningInstances(tenant: TenantRuntime): Promise<void> {
  const rows = await tenant.database.db.instance.findMany({ where: { tenantId: tenant.id, state: { in: ACTIVE_INSTANCE_STATES } } });
  const running = new Map(rows.filter((row) => row.state !== 'starting').map((row) => [row.id, row]));
  for (const id of [...tenant.instances.keys()]) if (!running.has(id)) tenant.instances.delete(id);
  for (const row of running.values()) {
    if (tenant.instances.get(row.id)?.record.version === row.version) continue;
    const workflow = new WorkflowRuntime(await loadDefinition(tenant.database, tenant.id, row.workflowId, row.version), row.workflowId);
    // Read again after the await: partitions are taken concurrently, and another one's sync may have added it.
    const known = tenant.instances.get(row.id);
    if (known?.record.version === row.version) continue;
    if (known) {
      known.workflow = workflow;
      known.record.version = row.version;
    } else tenant.instances.set(row.id, new InstanceRuntime(row, workflow, tenant.partitions));
  }
}
