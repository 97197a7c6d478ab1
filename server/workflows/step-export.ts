import type { EngineHandle } from '../engine/handle';
import { exportResponse, type ExportOptions } from '../exports/table-export';
import type { StepUsers } from '../engine/types';
import type { Database } from '../storage/database';
import type { Tenant } from '../tenants/tenants';
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
 * for the users who reached the goal from it. The day is the export's, in UTC (the server knows no reader's zone).
 */
export function stepExportName(journey: string, step: string, users: StepUsers, now: number): string {
  const parts = [slug(journey) || 'journey', slug(step) || 'step', ...(users === 'converted' ? ['converted'] : [])];
  return [...parts, new Date(now).toISOString().slice(0, 10)].join('-');
}

export type StepExportRequest = ExportOptions & { instanceId: string; step: string; users: StepUsers };

/** GET …/instances/{iid}/steps/{step}/export: the step's users (404 for an unknown instance or step), with profile columns if asked, under the journey's name. */
export async function stepExportResponse(engine: EngineHandle, database: Database, tenant: Tenant, request: StepExportRequest, now: number): Promise<Response> {
  const { instanceId, step, users, ...options } = request;
  const bitmap = await engine.stepBitmap(tenant.id, instanceId, step, users);
  const instance = await engine.getInstance(tenant.id, instanceId);
  const journey = await findWorkflow(database, tenant, instance.workflowId);
  return exportResponse(engine, tenant.id, bitmap, options, stepExportName(journey.name, step, users, now));
}
