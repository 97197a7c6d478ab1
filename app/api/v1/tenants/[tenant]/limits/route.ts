import { authenticate } from '@/server/auth';
import { json, readJson, route } from '@/server/http/respond';
import { tenantLimits, TenantLimitsPatch, updateTenantLimits } from '@/server/limits/limits';
import { audit } from '@/server/security/audit';
import { assertAdmin, findTenant, tenantFromRequest } from '@/server/tenants/tenants';
import { database } from '@/server/storage/database';

export const GET = route<{ tenant: string }>(async (request, params) =>
  json(await tenantLimits(database(), (await tenantFromRequest(request, params.tenant)).id)),
);

export const PUT = route<{ tenant: string }>(async (request, params) => {
  const principal = await authenticate(request);
  assertAdmin(principal);
  const tenant = await findTenant(database(), principal, params.tenant);
  const patch = await readJson(request, TenantLimitsPatch);
  const limits = await updateTenantLimits(database(), tenant.id, patch);
  await audit(database(), principal, 'tenant.limits', { tenantId: tenant.id, target: tenant.name, details: patch });
  return json(limits);
});
