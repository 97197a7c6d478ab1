import { json, readJson } from '@/server/http/respond';
import { tenantLimits, TenantLimitsPatch, updateTenantLimits } from '@/server/limits/limits';
import { adminTenantRoute, tenantRoute } from '@/server/http/request-context';

export const GET = tenantRoute<{ tenant: string }>(async ({ tenant, database }) => json(await tenantLimits(database, tenant.id)));

export const PUT = adminTenantRoute<{ tenant: string }>(async ({ tenant, request, database, audit }) => {
  const patch = await readJson(request, TenantLimitsPatch);
  const limits = await updateTenantLimits(database, tenant.id, patch);
  await audit('tenant.limits', { target: tenant.name, details: patch });
  return json(limits);
});
