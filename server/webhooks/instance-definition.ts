// The workflow definition an instance runs, as the webhook cut reads it for per-journey rules (a holdout, quiet hours).
import type { Database } from '../storage/database';

/** The instance's workflow id and its version's definition (as stored); null when the instance is gone. */
export async function instanceDefinition(
  database: Database,
  tenantId: string,
  instanceId: string,
): Promise<{ workflowId: string; definition: Record<string, unknown> } | null> {
  const instance = await database.db.instance.findUnique({ where: { id: instanceId, tenantId }, select: { workflowId: true, version: true } });
  if (!instance) return null;
  const version = await database.db.workflowVersion.findUnique({
    where: { tenantId_workflowId_version: { tenantId, workflowId: instance.workflowId, version: instance.version } },
    select: { definition: true },
  });
  return { workflowId: instance.workflowId, definition: version ? (JSON.parse(version.definition) as Record<string, unknown>) : {} };
}
