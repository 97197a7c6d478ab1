import { AppError, notFound } from '../errors';
import { validateWorkflow } from '../../core/model/validate';
import type { WorkflowDefinition } from '../../core/model/workflow';
import type { InstanceState, InstanceView, Reentry } from './types';
import type { Database } from '../storage/database';

type InstanceRow = Awaited<ReturnType<Database['db']['instance']['findUniqueOrThrow']>>;

export function instanceView(row: InstanceRow): InstanceView {
  return {
    id: row.id,
    tenantId: row.tenantId,
    workflowId: row.workflowId,
    version: row.version,
    crowdName: row.crowdName,
    state: row.state as InstanceState,
    userCount: Number(row.userCount),
    excludedCount: Number(row.excludedCount),
    reentry: row.reentry as Reentry,
    createdAt: row.createdAt.toISOString(),
    startedAt: row.startedAt?.toISOString() ?? null,
    stoppedAt: row.stoppedAt?.toISOString() ?? null,
  };
}

/** A stored workflow version, validated (a version saved before a rule existed may not run). */
export async function loadDefinition(database: Database, tenantId: string, workflowId: string, version: number): Promise<WorkflowDefinition> {
  const row = await database.db.workflowVersion.findUnique({ where: { tenantId_workflowId_version: { tenantId, workflowId, version } } });
  if (!row) throw notFound(`Version ${version} of workflow ${workflowId}`);
  const result = validateWorkflow(JSON.parse(row.definition));
  if (!result.ok) {
    const first = result.problems[0];
    const where = first.step ? `step "${first.step}": ` : '';
    throw new AppError('invalid_workflow', `Version ${version} of workflow ${workflowId} is not valid: ${where}${first.message}`, {
      problems: result.problems,
    });
  }
  return result.definition;
}
