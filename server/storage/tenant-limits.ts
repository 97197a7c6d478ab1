// A tenant's overridden limits (server/limits/limits.ts holds the defaults and their checks): one TenantLimits row,
// the JSON object of the fields the tenant overrides.
import type { Database } from './database';

/** The JSON of the tenant's overrides; undefined when it overrides nothing. */
export async function readLimitOverrides({ dialect, raw }: Database, tenantId: string): Promise<string | undefined> {
  const { params, bind } = dialect.parameters();
  const [row] = await (await raw()).query<{ limits: string }>(
    `SELECT "limits" FROM ${dialect.table('TenantLimits')} WHERE "tenantId" = ${bind(tenantId)}`,
    params,
  );
  return row?.limits;
}

/** Replaces the tenant's overrides with `limits` (JSON). */
export async function writeLimitOverrides({ dialect, raw }: Database, tenantId: string, limits: string): Promise<void> {
  const { params, bind } = dialect.parameters();
  await (await raw()).execute(
    `INSERT INTO ${dialect.table('TenantLimits')} ("tenantId", "limits", "updatedAt") VALUES (${bind(tenantId)}, ${bind(limits)}, CURRENT_TIMESTAMP)
     ON CONFLICT ("tenantId") DO UPDATE SET "limits" = excluded."limits", "updatedAt" = excluded."updatedAt"`,
    params,
  );
}
