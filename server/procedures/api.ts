import { z } from 'zod';
import type { Principal } from '../auth';
import { notFound } from '../errors';
import type { Database } from '../storage/database';
import { toView } from './store';
import { PROCEDURE_STATES, type ProcedureRunner, type ProcedureState, type ProcedureView } from './types';

// The procedures API: an admin sees every procedure; a tenant key sees only its tenant's (others are 404, never 403,
// so ids of other tenants do not leak).

export const ListProceduresQuery = z.strictObject({
  type: z.string().min(1).optional(),
  state: z.enum(PROCEDURE_STATES).optional(),
  workflow: z.string().min(1).optional(),
  limit: z.coerce.number().int().min(1).max(500).default(100),
});

export const WaitQuery = z.strictObject({
  wait: z.coerce.number().min(0, 'wait is seconds from 0 to 60').max(60, 'wait is seconds from 0 to 60').default(0),
});

function visibleTo(principal: Principal) {
  return principal.kind === 'tenant' ? { tenantId: principal.tenantId } : {};
}

/** Newest first. */
export async function listProcedures(
  { db }: Database,
  principal: Principal,
  query: z.infer<typeof ListProceduresQuery>,
): Promise<{ procedures: ProcedureView[] }> {
  const rows = await db.procedure.findMany({
    where: { ...visibleTo(principal), type: query.type, state: query.state, workflowId: query.workflow },
    orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
    take: query.limit,
  });
  return { procedures: rows.map(toView) };
}

async function requireVisible({ db }: Database, principal: Principal, id: string): Promise<void> {
  const row = await db.procedure.findFirst({ where: { id, ...visibleTo(principal) }, select: { id: true } });
  if (!row) throw notFound(`Procedure "${id}"`);
}

/** One committed step of a procedure (execute or rollback), oldest first. */
export interface ProcedureStepView {
  step: number;
  state: ProcedureState;
  at: string;
}

/** A procedure with its committed steps and its child procedures (what the studio's procedure panel shows). */
export type ProcedureDetail = ProcedureView & { steps: ProcedureStepView[]; children: ProcedureView[] };

/** The procedure now, or (with waitSeconds) once it has finished or the wait has elapsed, whichever comes first. */
export async function getProcedure(
  database: Database,
  runner: ProcedureRunner,
  principal: Principal,
  id: string,
  waitSeconds: number,
): Promise<ProcedureDetail> {
  await requireVisible(database, principal, id);
  const view = await runner.await(id, waitSeconds * 1000);
  const [steps, children] = await Promise.all([
    database.db.procedureStep.findMany({ where: { procedureId: id }, orderBy: { step: 'asc' }, select: { step: true, state: true, createdAt: true } }),
    database.db.procedure.findMany({ where: { parentId: id }, orderBy: [{ createdAt: 'asc' }, { id: 'asc' }] }),
  ]);
  return {
    ...view,
    steps: steps.map((row) => ({ step: row.step, state: row.state as ProcedureState, at: row.createdAt.toISOString() })),
    children: children.map(toView),
  };
}

export async function retryProcedure(database: Database, runner: ProcedureRunner, principal: Principal, id: string): Promise<ProcedureView> {
  await requireVisible(database, principal, id);
  return runner.retry(id);
}
