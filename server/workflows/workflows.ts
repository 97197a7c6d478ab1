import { z } from 'zod';
import { AppError, badRequest, conflict, isRecordMissing, isUniqueViolation, notFound } from '../errors';
import { newId } from '../ids';
import { validateSchedule, validateWorkflow } from '../../core/model/validate';
import { tenantLimits } from '../limits/limits';
import { timerPeriodProblems } from '../limits/timer-period';
import { WorkflowDraft, WorkflowName, WorkflowSchedule, type WorkflowDefinition, type WorkflowProblem } from '../../core/model/workflow';
import type { Database } from '../storage/database';
import { deleteWorkflowRows, insertWorkflow, saveWorkflowRow } from '../storage/workflow-rows';
import { ACTIVE_INSTANCE_STATES, canNameRow, type Tenant } from '../tenants/tenants';
import { notifyScheduleChanged } from '../procedures/schedule-changes';
import { runningOf, type RunningInstance } from './running';
import { workflowWarnings } from './warnings';

// Workflows of a tenant. Every save that carries a definition writes a new immutable WorkflowVersion
// and bumps currentVersion in the same transaction; draft (canvas positions/labels), name and schedule
// live on the Workflow row and change without a new version.

// The definition and schedule are taken as unknown here and checked by validateWorkflow()/validateSchedule(),
// so a bad save answers 400 invalid_workflow with every problem at once instead of zod's first shape error.
export const CreateWorkflowRequest = z.strictObject({
  name: WorkflowName,
  definition: z.unknown().refine((value) => value !== undefined, 'A workflow needs a definition'),
  draft: WorkflowDraft.optional(),
  schedule: z.unknown().optional(),
});
export const UpdateWorkflowRequest = z.strictObject({
  name: WorkflowName.optional(),
  definition: z.unknown().optional(),
  draft: WorkflowDraft.optional(),
  schedule: z.unknown().optional(),
});
export type CreateWorkflowRequest = z.infer<typeof CreateWorkflowRequest>;
export type UpdateWorkflowRequest = z.infer<typeof UpdateWorkflowRequest>;

/** A 1,000-step journey is ~200 KB of JSON; 1 MiB bounds validation to a few hundred ms on hostile input. */
export const WORKFLOW_BODY_LIMIT = 1024 * 1024;

export const VersionParam = z.string().regex(/^[1-9]\d{0,8}$/, 'Versions are whole numbers from 1');

export type Running = RunningInstance | null;
export type WorkflowView = {
  id: string;
  name: string;
  version: number;
  definition: WorkflowDefinition;
  draft: WorkflowDraft;
  schedule: WorkflowSchedule | null;
  createdAt: string;
  updatedAt: string;
  running: Running;
};
export type WorkflowSummary = Pick<WorkflowView, 'id' | 'name' | 'version' | 'schedule' | 'createdAt' | 'updatedAt' | 'running'>;
export type VersionView = { workflowId: string; version: number; definition: WorkflowDefinition; createdAt: string };

type WorkflowRow = {
  id: string;
  tenantId: string;
  name: string;
  currentVersion: number;
  draft: string;
  schedule: string | null;
  createdAt: Date;
  updatedAt: Date;
};

const EMPTY_DRAFT: WorkflowDraft = { positions: {}, labels: {} };

/** A schedule saved before a field existed reads with that field's default. */
function storedSchedule(text: string): WorkflowSchedule {
  const stored = JSON.parse(text) as WorkflowSchedule;
  const parsed = WorkflowSchedule.safeParse(stored);
  return parsed.success ? parsed.data : stored;
}

function summary(row: WorkflowRow, running: Running): WorkflowSummary {
  return {
    id: row.id,
    name: row.name,
    version: row.currentVersion,
    schedule: row.schedule ? storedSchedule(row.schedule) : null,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
    running,
  };
}

/** Finds a workflow of the tenant by id, or else by name; other tenants' workflows are never found. */
export async function findWorkflow({ db }: Database, tenant: Tenant, ref: string): Promise<WorkflowRow> {
  const rows = canNameRow(ref) ? await db.workflow.findMany({ where: { tenantId: tenant.id, OR: [{ id: ref }, { name: ref }] }, take: 2 }) : [];
  const row = rows.find((r) => r.id === ref) ?? rows[0];
  if (!row) throw notFound(`Workflow "${ref}" in tenant "${tenant.name}"`);
  return row;
}

async function view(database: Database, row: WorkflowRow): Promise<WorkflowView> {
  const version = await database.db.workflowVersion.findUnique({
    where: { tenantId_workflowId_version: { tenantId: row.tenantId, workflowId: row.id, version: row.currentVersion } },
  });
  if (!version) throw notFound(`Version ${row.currentVersion} of workflow "${row.name}"`);
  const running = (await runningOf(database, [row.id])).get(row.id) ?? null;
  const { id, name, version: v, schedule, createdAt, updatedAt } = summary(row, running);
  return { id, name, version: v, definition: JSON.parse(version.definition), draft: JSON.parse(row.draft), schedule, createdAt, updatedAt, running };
}

/** Throws 400 invalid_workflow listing every problem of the definition and the schedule; returns what to store. */
async function checkedSave(
  database: Database,
  tenant: Tenant,
  definition: unknown,
  schedule: unknown,
  now: number,
): Promise<{ definition?: WorkflowDefinition; schedule?: WorkflowSchedule | null }> {
  const problems: WorkflowProblem[] = [];
  let checked: WorkflowDefinition | undefined;
  if (definition !== undefined) {
    const result = validateWorkflow(definition, { now });
    if (result.ok) checked = result.definition;
    else problems.push(...result.problems);
    // The one rule that depends on the tenant, so it is checked here and not in the shared validateWorkflow().
    if (result.ok) problems.push(...timerPeriodProblems(result.definition, (await tenantLimits(database, tenant.id)).minTimerPeriodSeconds, now));
  }
  if (schedule !== undefined && schedule !== null) problems.push(...validateSchedule(schedule));
  if (problems.length > 0) {
    const first = problems[0].message;
    throw new AppError(
      'invalid_workflow',
      `The workflow has ${problems.length} problem${problems.length === 1 ? '' : 's'}: ${first}${problems.length > 1 ? ' …' : ''}`,
      { problems },
    );
  }
  return {
    ...(definition === undefined ? {} : { definition: checked }),
    ...(schedule === undefined ? {} : { schedule: schedule === null ? null : WorkflowSchedule.parse(schedule) }),
  };
}

function duplicateName(tenant: Tenant, name: string): AppError {
  return conflict(`A workflow named "${name}" already exists in tenant "${tenant.name}"`);
}

/** A saved workflow with what is allowed but will not work yet (crowds its conditions or schedule name that the tenant does not have). */
export type SavedWorkflow = WorkflowView & { warnings: WorkflowProblem[] };

async function withWarnings(database: Database, tenant: Tenant, saved: WorkflowView): Promise<SavedWorkflow> {
  return { ...saved, warnings: await workflowWarnings(database, tenant, saved.definition, saved.schedule) };
}

export async function createWorkflow(database: Database, tenant: Tenant, body: CreateWorkflowRequest, now = Date.now()): Promise<SavedWorkflow> {
  const checked = await checkedSave(database, tenant, body.definition, body.schedule ?? null, now);
  const id = newId('wf');
  const at = new Date(now);
  try {
    await insertWorkflow(
      database,
      {
        id,
        tenantId: tenant.id,
        name: body.name,
        draft: JSON.stringify(body.draft ?? EMPTY_DRAFT),
        schedule: checked.schedule ? JSON.stringify(checked.schedule) : null,
        at,
      },
      JSON.stringify(checked.definition),
    );
  } catch (error) {
    if (isUniqueViolation(error)) throw duplicateName(tenant, body.name);
    throw error;
  }
  if (checked.schedule) notifyScheduleChanged(database, tenant.id, id);
  return withWarnings(database, tenant, await view(database, await findWorkflow(database, tenant, id)));
}

export async function listWorkflows(database: Database, tenant: Tenant): Promise<WorkflowSummary[]> {
  const rows = await database.db.workflow.findMany({ where: { tenantId: tenant.id }, orderBy: { name: 'asc' } });
  const running = await runningOf(
    database,
    rows.map((r) => r.id),
  );
  return rows.map((row) => summary(row, running.get(row.id) ?? null));
}

export async function getWorkflow(database: Database, tenant: Tenant, ref: string): Promise<SavedWorkflow> {
  return withWarnings(database, tenant, await view(database, await findWorkflow(database, tenant, ref)));
}

/** A save: with a definition it makes version N+1; without one it changes only name, draft or schedule. */
export async function updateWorkflow(database: Database, tenant: Tenant, ref: string, body: UpdateWorkflowRequest, now = Date.now()): Promise<SavedWorkflow> {
  if (Object.values(body).every((value) => value === undefined)) {
    throw badRequest('Nothing to save: give at least one of name, definition, draft, schedule');
  }
  const current = await findWorkflow(database, tenant, ref);
  const checked = await checkedSave(database, tenant, body.definition, body.schedule, now);
  const fields = {
    ...(body.name === undefined ? {} : { name: body.name }),
    ...(body.draft === undefined ? {} : { draft: JSON.stringify(body.draft) }),
    ...(checked.schedule === undefined ? {} : { schedule: checked.schedule ? JSON.stringify(checked.schedule) : null }),
    updatedAt: new Date(now),
  };
  try {
    await saveWorkflowRow(database, tenant.id, current.id, fields, checked.definition === undefined ? undefined : JSON.stringify(checked.definition));
  } catch (error) {
    if (isUniqueViolation(error)) throw duplicateName(tenant, body.name ?? current.name);
    if (isRecordMissing(error)) throw notFound(`Workflow "${ref}" in tenant "${tenant.name}"`);
    throw error;
  }
  if (checked.schedule !== undefined) notifyScheduleChanged(database, tenant.id, current.id);
  return withWarnings(database, tenant, await view(database, await findWorkflow(database, tenant, current.id)));
}

/**
 * Deletes a workflow with its versions and its stopped instances, refused with nothing removed while an instance is
 * active (server/storage/workflow-rows.ts says how a concurrent start is seen). The journal (notifications) and
 * procedure records stay: consumers and the procedures panel keep their history until retention removes it.
 */
export async function deleteWorkflow(database: Database, tenant: Tenant, ref: string, now: number): Promise<void> {
  const workflow = await findWorkflow(database, tenant, ref);
  const deleted = await deleteWorkflowRows(database, tenant.id, workflow.id, ACTIVE_INSTANCE_STATES, new Date(now)).catch((error: unknown) => {
    throw isRecordMissing(error) ? notFound(`Workflow "${ref}" in tenant "${tenant.name}"`) : error;
  });
  if (deleted.kind === 'active') {
    const { id, state } = deleted.instance;
    throw conflict(`Workflow "${workflow.name}" has instance ${id} ${state}; stop it before deleting the workflow`, { instanceId: id, state });
  }
  if (workflow.schedule !== null) notifyScheduleChanged(database, tenant.id, workflow.id);
}

export async function listVersions(
  database: Database,
  tenant: Tenant,
  ref: string,
): Promise<{ workflowId: string; current: number; versions: { version: number; createdAt: string }[] }> {
  const workflow = await findWorkflow(database, tenant, ref);
  const versions = await database.db.workflowVersion.findMany({
    where: { tenantId: tenant.id, workflowId: workflow.id },
    select: { version: true, createdAt: true },
    orderBy: { version: 'desc' },
  });
  return {
    workflowId: workflow.id,
    current: workflow.currentVersion,
    versions: versions.map((v) => ({ version: v.version, createdAt: v.createdAt.toISOString() })),
  };
}

export async function getVersion(database: Database, tenant: Tenant, ref: string, version: number): Promise<VersionView> {
  const workflow = await findWorkflow(database, tenant, ref);
  const row = await database.db.workflowVersion.findUnique({
    where: { tenantId_workflowId_version: { tenantId: tenant.id, workflowId: workflow.id, version } },
  });
  if (!row) throw notFound(`Version ${version} of workflow "${workflow.name}"`);
  return { workflowId: workflow.id, version: row.version, definition: JSON.parse(row.definition), createdAt: row.createdAt.toISOString() };
}
