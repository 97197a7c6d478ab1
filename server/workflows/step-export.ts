import { stepUsersAsOf } from '../engine/as-of';
import type { EngineHandle } from '../engine/handle';
import { exportResponse, type ExportFormatters, type ExportOptions } from '../exports/table-export';
import type { HoldoutGroup, StepUsers } from '../engine/types';
import type { Database } from '../storage/database';
import type { Tenant } from '../tenants/tenants';
import { badRequest, notFound } from '../errors';
import { cappedStepUsers } from '../webhooks/capping';
import { quietStepUsers } from '../webhooks/quiet-holding';
import { findWorkflow } from './workflows';

// A step's users as a download named for a person's Downloads folder: the journey, the step and the day
// (`welcome-journey-bought-2026-12-05.csv`), where the instance id told a marketer nothing.

const SLUG_LENGTH = 60;

/** A name as a file-name part: lower-case ASCII letters and digits joined by `-` ("Welcome journey" → "welcome-journey"). */
export function slug(name: string): string {
  const words = name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-');
  return words.slice(0, SLUG_LENGTH).replace(/^-+|-+$/g, '');
}

/**
 * The file name, without extension, of a step's export: `journey-step-YYYY-MM-DD`, with `-converted` after the step
 * for the users who reached the goal from it (then `-holdout` or `-treatment` for one group of a holdout). The day is
 * the export's, in UTC (the server knows no reader's zone).
 */
export function stepExportName(journey: string, step: string, users: StepUsers | DeliveryUsers, now: number, asOf = false, group?: HoldoutGroup): string {
  const parts = [slug(journey) || 'journey', slug(step) || 'step', ...(users === 'in' ? [] : [users]), ...(group ? [group] : [])];
  // A past moment is named to the second (`…-at-2026-12-01T09-30-00Z`): two exports of one day then differ.
  const time = new Date(now).toISOString();
  return [...parts, asOf ? `at-${time.slice(0, 19).replaceAll(':', '-')}Z` : time.slice(0, 10)].join('-');
}

/**
 * Users the webhook cut recorded at a step, read from the database: `capped`, a frequency cap skipped a delivery of
 * theirs (server/webhooks/capping.ts); `quiet`, their delivery waits for quiet hours to end (server/webhooks/quiet-holding.ts).
 */
type DeliveryUsers = 'capped' | 'quiet';
const isDeliveryUsers = (users: string): users is DeliveryUsers => users === 'capped' || users === 'quiet';

export type StepExportRequest = ExportOptions & { instanceId: string; step: string; users: StepUsers | DeliveryUsers; asOf?: number; group?: HoldoutGroup };

/** GET …/instances/{iid}/steps/{step}/export: the step's users (404 for an unknown instance or step), with profile columns if asked, under the journey's name. */
export async function stepExportResponse(
  engine: EngineHandle,
  formatters: ExportFormatters,
  database: Database,
  tenant: Tenant,
  request: StepExportRequest,
  now: number,
): Promise<Response> {
  const { instanceId, step, users, asOf, group, ...options } = request;
  if (asOf !== undefined) {
    // Moves and exits are journaled, conversions and capped deliveries are not.
    if (users !== 'in' && users !== 'exited')
      throw badRequest(`asOf answers who was in the step then (users=in) or had exited early from it (users=exited); users=${users} has no past state`, {
        path: 'asOf',
      });
    if (group) throw badRequest('asOf answers who was in the step then, of both groups; leave out group', { path: 'group' });
    const bitmap = await stepUsersAsOf(database, tenant, instanceId, step, asOf, now, users);
    const journey = await findWorkflow(database, tenant, (await engine.getInstance(tenant.id, instanceId)).workflowId);
    return exportResponse(engine, formatters, tenant.id, bitmap, options, stepExportName(journey.name, step, users, asOf, true));
  }
  const instance = isDeliveryUsers(users) ? await engine.getInstance(tenant.id, instanceId) : undefined;
  if (instance) {
    const version = await database.db.workflowVersion.findUnique({
      where: { tenantId_workflowId_version: { tenantId: tenant.id, workflowId: instance.workflowId, version: instance.version } },
    });
    const steps = version ? (JSON.parse(version.definition) as { steps: { name: string }[] }).steps : [];
    if (!steps.some((s) => s.name === step)) throw notFound(`Step "${step}" of instance ${instanceId}`);
  }
  const bitmap =
    users === 'capped'
      ? await cappedStepUsers(database, tenant.id, instanceId, step)
      : users === 'quiet'
        ? await quietStepUsers(database, tenant.id, instanceId, step)
        : await engine.stepBitmap(tenant.id, instanceId, step, users, group);
  const journey = await findWorkflow(database, tenant, (instance ?? (await engine.getInstance(tenant.id, instanceId))).workflowId);
  return exportResponse(engine, formatters, tenant.id, bitmap, options, stepExportName(journey.name, step, users, now, false, group));
}
