// The inputs of the cluster's partition assignment (server/cluster/member.ts) and the gathers among them: a
// ClusterGather row names the member all of a tenant's partitions go to until `untilMs` (database time), for the
// length of a tenant-wide instance operation (server/cluster/gather.ts decides when to claim, renew and let go).
import { DB_NOW_MS, type ClusterSession } from './cluster-session';

/** What changes whenever the assignment's tenant inputs may have: a poll cheap enough for every few hundred ms. */
export interface AssignmentShape {
  tenants: string;
  partitions: string;
  newest: string | null;
  /** The current gathers, `tenant=member` by tenant. */
  gathers: string | null;
}

/** A tenant as the assignment takes it: its partitions, and the member gathering them now if any. */
export interface TenantToAssign {
  id: string;
  partitions: number;
  gatheredBy: string | null;
}

export async function assignmentShape(session: ClusterSession): Promise<AssignmentShape> {
  const { rows } = await session.run<AssignmentShape>(
    `SELECT count(*)::text AS "tenants", coalesce(sum(t."partitions"), 0)::text AS "partitions", max(t."createdAt")::text AS "newest",
        (SELECT string_agg(g."tenantId" || '=' || g."member", ',' ORDER BY g."tenantId") FROM ${session.table('ClusterGather')} g WHERE g."untilMs" > ${DB_NOW_MS}) AS "gathers"
        FROM ${session.table('Tenant')} t`,
  );
  return rows[0];
}

/** Every tenant, by id. */
export async function tenantsToAssign(session: ClusterSession): Promise<TenantToAssign[]> {
  const { rows } = await session.run<TenantToAssign>(
    `SELECT t."id", t."partitions", g."member" AS "gatheredBy" FROM ${session.table('Tenant')} t
        LEFT JOIN ${session.table('ClusterGather')} g ON g."tenantId" = t."id" AND g."untilMs" > ${DB_NOW_MS} ORDER BY t."id"`,
  );
  return rows;
}

/** Who holds the tenant's gather row, and whether its hold is still current; undefined when there is none. */
export async function gatherHolder(session: ClusterSession, tenantId: string): Promise<{ member: string; current: boolean } | undefined> {
  const { rows } = await session.run<{ member: string; current: boolean }>(
    `SELECT "member", "untilMs" > ${DB_NOW_MS} AS "current" FROM ${session.table('ClusterGather')} WHERE "tenantId" = $1`,
    [tenantId],
  );
  return rows[0];
}

/**
 * Makes `member` the tenant's gatherer for `holdMs`, compare-and-set on the holder read before (`expectedHolder`;
 * the claimer itself when there was no row): of two members claiming at once one wins. Whether this one did.
 */
export async function claimGather(session: ClusterSession, tenantId: string, member: string, expectedHolder: string, holdMs: number): Promise<boolean> {
  const gathers = session.table('ClusterGather');
  const { rows } = await session.run(
    `INSERT INTO ${gathers} ("tenantId", "member", "untilMs") VALUES ($1, $2, ${DB_NOW_MS} + ${Math.trunc(holdMs)})
       ON CONFLICT ("tenantId") DO UPDATE SET "member" = excluded."member", "untilMs" = excluded."untilMs"
        WHERE ${gathers}."member" = $3 RETURNING 1 AS "claimed"`,
    [tenantId, member, expectedHolder],
  );
  return rows.length > 0;
}

/** Pushes the hold of the tenants' gathers `member` holds out to `holdMs` from now (one taken over is not touched). */
export async function renewGathers(session: ClusterSession, tenantIds: string[], member: string, holdMs: number): Promise<void> {
  await session.run(
    `UPDATE ${session.table('ClusterGather')} SET "untilMs" = ${DB_NOW_MS} + ${Math.trunc(holdMs)} WHERE "tenantId" = ANY($1::text[]) AND "member" = $2`,
    [tenantIds, member],
  );
}

/** Lets go of the tenant's gather if `member` holds it. */
export async function releaseGather(session: ClusterSession, tenantId: string, member: string): Promise<void> {
  await session.run(`DELETE FROM ${session.table('ClusterGather')} WHERE "tenantId" = $1 AND "member" = $2`, [tenantId, member]);
}
