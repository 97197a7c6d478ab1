// Workflow warnings about webhook destinations: a step whose enter action (or a parallel step's action) names a
// destination the tenant does not have. Legal, since the destination may be created afterwards, but until then the
// moves into the step go nowhere, and a destination created later starts at the journal's tail unless `start: "head"`.
import type { WorkflowDefinition, WorkflowProblem } from '../../core/model/workflow';
import type { Tenant } from '../tenants/tenants';
import { WEBHOOK_TAG_PREFIX } from './destinations';
import type { Database } from '../storage/database';

function destinationsNamed(definition: WorkflowDefinition): { step: string; destination: string }[] {
  const named: { step: string; destination: string }[] = [];
  for (const step of definition.steps) {
    const tags = [step.enterAction, ...(step.kind === 'parallel' ? step.actions : [])].flatMap((action) => (action ?? '').split(','));
    for (const tag of tags.map((t) => t.trim()))
      if (tag.startsWith(WEBHOOK_TAG_PREFIX)) named.push({ step: step.name, destination: tag.slice(WEBHOOK_TAG_PREFIX.length) });
  }
  return named;
}

export async function webhookWarnings(database: Database, tenant: Tenant, definition: WorkflowDefinition): Promise<WorkflowProblem[]> {
  const named = destinationsNamed(definition);
  if (named.length === 0) return [];
  const found = await database.db.webhookDestination.findMany({
    where: { tenantId: tenant.id, name: { in: named.map((n) => n.destination) } },
    select: { name: true },
  });
  const existing = new Set(found.map((destination) => destination.name));
  return named
    .filter((n) => !existing.has(n.destination))
    .map((n) => ({
      step: n.step,
      code: 'unknown_webhook',
      message:
        `Step "${n.step}" sends entering users to webhook destination "${n.destination}", but tenant "${tenant.name}" has no ` +
        'destination of that name: those moves are not delivered until one is created',
    }));
}
