import { authenticate } from '@/server/auth';
import { json, route } from '@/server/http/respond';
import { audit } from '@/server/security/audit';
import { assertAdmin, deleteTenant, findTenant, tenantFromRequest, tenantView } from '@/server/tenants/tenants';
import { database } from '@/server/storage/database';

export const GET = route<{ tenant: string }>(async (request, { tenant }) => json(tenantView(await tenantFromRequest(request, tenant))));

export const DELETE = route<{ tenant: string }>(async (request, { tenant }) => {
  const principal = await authenticate(request);
  assertAdmin(principal);
  const found = await findTenant(database(), principal, tenant);
  await deleteTenant(database(), found);
  await audit(database(), principal, 'tenant.delete', { tenantId: found.id, target: found.name });
  return new Response(null, { status: 204 });
});
