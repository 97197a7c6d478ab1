// The audit trail: who (the admin token, an admin studio session, or an API key) did what to which tenant, when.
// Recorded after the action succeeded; rows outlive the tenant they name. Read by the admin through GET /audit.
import { z } from 'zod';
import { actorOf, type Principal } from '../auth';
import type { Database } from '../storage/database';

export const AUDIT_ACTIONS = [
  'session.sign_in',
  'session.sign_in_failed',
  'session.sign_out',
  'session.end_all',
  'tenant.create',
  'tenant.limits',
  'tenant.delete',
  'key.create',
  'key.revoke',
  'instance.start',
  'instance.stop',
  'instance.update_crowd',
  'instance.update_workflow',
  'experiment.winner',
  'procedure.retry',
  'webhook.create',
  'webhook.update',
  'webhook.delete',
  'webhook.replay',
  'cap.create',
  'cap.update',
  'cap.delete',
  'quiet-hours.put',
  'quiet-hours.delete',
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

export type AuditView = { seq: number; at: string; actor: string; action: string; tenantId: string | null; target: string; details: unknown };

/** Records one action; a failure to record is logged, not thrown: the action itself has already happened. */
export async function audit(
  { db }: Database,
  who: Principal | 'anonymous',
  action: AuditAction,
  what: { tenantId?: string | null; target: string; details?: unknown },
): Promise<void> {
  try {
    await db.auditEvent.create({
      data: {
        actor: who === 'anonymous' ? 'anonymous' : actorOf(who),
        action,
        tenantId: what.tenantId ?? null,
        target: what.target,
        details: what.details === undefined ? null : JSON.stringify(what.details),
      },
    });
  } catch (error) {
    console.error(`[crowdflow] could not record audit event ${action} ${what.target}`, error);
  }
}

export const AuditQuery = z.strictObject({
  tenantId: z.string().min(1).max(200).optional().describe('Only events of this tenant id'),
  action: z.enum(AUDIT_ACTIONS).optional(),
  after: z.coerce
    .number()
    .int()
    .min(0)
    .max(2 ** 31 - 1)
    .default(0)
    .describe('Events after this seq (the `next` of the previous page)'),
  limit: z.coerce.number().int().min(1).max(1000).default(100),
});

export async function listAudit({ db }: Database, query: z.infer<typeof AuditQuery>): Promise<{ events: AuditView[]; next: number }> {
  const rows = await db.auditEvent.findMany({
    where: { seq: { gt: query.after }, ...(query.tenantId ? { tenantId: query.tenantId } : {}), ...(query.action ? { action: query.action } : {}) },
    orderBy: { seq: 'asc' },
    take: query.limit,
  });
  const events = rows.map((r) => ({
    seq: r.seq,
    at: r.at.toISOString(),
    actor: r.actor,
    action: r.action,
    tenantId: r.tenantId,
    target: r.target,
    details: r.details === null ? null : (JSON.parse(r.details) as unknown),
  }));
  return { events, next: events.at(-1)?.seq ?? query.after };
}
