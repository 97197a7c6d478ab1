// A tenant's rows as whole operations, each one transaction: deleting the tenant with everything it owns, and revoking
// an API key with every key it created. The domain (server/tenants/tenants.ts) turns their outcomes into answers.
import type { Database } from './database';
import { seqsFollowTheNewestRow } from './journal/max-seq';

export type TenantRowsDeleted = { kind: 'deleted' } | { kind: 'missing' } | { kind: 'active'; instances: number };

/**
 * Deletes the tenant row, so the schema's relations cascade to what it owns (prisma/models.prisma), unless the tenant
 * is gone or has instances in `activeStates`. The tenant row is locked first (against every writer, including inserts
 * of rows that reference it), so the count sees every instance committed before it.
 */
export async function deleteTenantRows(database: Database, tenantId: string, activeStates: readonly string[]): Promise<TenantRowsDeleted> {
  return database.db.$transaction(
    async (tx): Promise<TenantRowsDeleted> => {
      if (!(await database.dialect.lockRowForUpdate(tx, 'Tenant', tenantId))) return { kind: 'missing' };
      const instances = await tx.instance.count({ where: { tenantId, state: { in: [...activeStates] } } });
      if (instances > 0) return { kind: 'active', instances };
      // Not cascaded: on SQLite the journal's newest entry stays even when it is this tenant's (seqs continue from the
      // max, so deleting it would hand out seqs again that other tenants' checkpoints and consumer cursors have passed) ...
      const newest = seqsFollowTheNewestRow(database) ? (await tx.journal.aggregate({ _max: { seq: true } }))._max.seq : null;
      await tx.journal.deleteMany({ where: { tenantId, ...(newest === null ? {} : { seq: { lt: newest } }) } });
      // ... and unfinished procedures are kept (their runner finishes them; the tenant is then gone).
      await tx.procedure.deleteMany({ where: { tenantId, state: { in: ['done', 'failed'] } } });
      await tx.tenant.delete({ where: { id: tenantId } });
      return { kind: 'deleted' };
    },
    { maxWait: 30_000, timeout: 120_000 },
  );
}

/** Revokes the tenant's key `keyId` and every key it created, directly or through keys it created; returns those. */
export async function revokeKeyTree(database: Database, tenantId: string, keyId: string, at: Date): Promise<string[]> {
  return database.db.$transaction(async (tx) => {
    const found: string[] = [];
    for (let parents = [keyId]; parents.length > 0; ) {
      const children = await tx.apiKey.findMany({ where: { tenantId, createdBy: { in: parents } }, select: { id: true } });
      parents = children.map((c) => c.id).filter((id) => !found.includes(id));
      found.push(...parents);
    }
    await tx.apiKey.updateMany({ where: { id: { in: [keyId, ...found] }, revokedAt: null }, data: { revokedAt: at } });
    return found;
  });
}
