import { analyzeCondition } from '../../core/conditions/analyze';
import type { WorkflowDefinition, WorkflowProblem, WorkflowSchedule } from '../../core/model/workflow';
import type { Database } from '../storage/database';
import type { Tenant } from '../tenants/tenants';
import { webhookWarnings } from '../webhooks/warnings';

// What a save allows but will not work yet: names of crowds or webhook destinations the tenant does not have (yet).
// They stay legal, because a crowd may be uploaded (a destination created) after the workflow that names it; the save,
// get and explain answers list them as warnings.

/** A crowd a definition names: the step (null: the workflow's entry or goal), the field and the crowd name. */
type CrowdRead = { step: string | null; field: string; crowd: string; inCondition: boolean };

/** Where the definition names a crowd: each condition's `inCrowd("name")` (steps, entry, goal) and the entry's crowd. */
function crowdReads(definition: WorkflowDefinition): CrowdRead[] {
  const reads: CrowdRead[] = [];
  const add = (step: string | null, field: string, text: string) => {
    const analysis = analyzeCondition(text);
    if (analysis.ok) for (const crowd of analysis.condition.usage.crowds) reads.push({ step, field, crowd, inCondition: true });
  };
  for (const step of definition.steps) {
    if (step.kind === 'branch') step.branches.forEach((branch, i) => add(step.name, `branches[${i}].condition`, branch.condition));
    if (step.kind === 'timer' && step.condition !== undefined) add(step.name, 'condition', step.condition);
  }
  const { entry, goal } = definition;
  if (entry?.condition !== undefined) add(null, 'entry.condition', entry.condition);
  if (entry?.crowd !== undefined) reads.push({ step: null, field: 'entry.crowd', crowd: entry.crowd, inCondition: false });
  if (goal) add(null, 'goal.condition', goal.condition);
  return reads;
}

function unknownCrowdMessage(read: CrowdRead, tenant: Tenant): string {
  const where = read.step === null ? `Workflow ${read.field}` : `Step "${read.step}" ${read.field}`;
  const missing = `tenant "${tenant.name}" has no crowd of that name`;
  if (!read.inCondition) return `${where} names crowd ${JSON.stringify(read.crowd)}, but ${missing}: no user enters by events until one is uploaded`;
  return `${where} reads inCrowd(${JSON.stringify(read.crowd)}), but ${missing}: it is false for every user until one is uploaded`;
}

/** Warnings of a saved workflow: crowds and webhook destinations it names that the tenant does not have. */
export async function workflowWarnings(
  database: Database,
  tenant: Tenant,
  definition: WorkflowDefinition,
  schedule: WorkflowSchedule | null,
): Promise<WorkflowProblem[]> {
  return [...(await crowdWarnings(database, tenant, definition, schedule)), ...(await webhookWarnings(database, tenant, definition))];
}

async function crowdWarnings({ db }: Database, tenant: Tenant, definition: WorkflowDefinition, schedule: WorkflowSchedule | null): Promise<WorkflowProblem[]> {
  const reads = crowdReads(definition);
  const named = new Set([...reads.map((read) => read.crowd), ...(schedule ? [schedule.crowd] : [])]);
  if (named.size === 0) return [];
  const found = await db.crowd.findMany({ where: { tenantId: tenant.id, name: { in: [...named] } }, select: { name: true } });
  const existing = new Set(found.map((crowd) => crowd.name));
  const warnings: WorkflowProblem[] = reads
    .filter((read) => !existing.has(read.crowd))
    .map((read) => ({ step: read.step, code: 'unknown_crowd', message: unknownCrowdMessage(read, tenant) }));
  if (schedule && !existing.has(schedule.crowd)) {
    warnings.push({
      step: null,
      code: 'unknown_crowd',
      message: `Schedule crowd "${schedule.crowd}" does not exist in tenant "${tenant.name}"; its firings will fail until it is uploaded`,
    });
  }
  return warnings;
}
