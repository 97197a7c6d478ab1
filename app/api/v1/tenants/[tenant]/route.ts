import { authenticate } from '@/server/auth';
import { json, route } from '@/server/http/respond';
import { audit } from '@/server/security/audit';
import { assertAdmin, deleteTenant, findTenant, tenantFromRequest, tenantView } from '@/server/tenants/tenants';

export const GET = route<{ tenant: string }>(async (request, { tenant }) => json(tenantView(await tenantFromRequest(request, tenant))));

export const DELETE = route<{ tenant: string }>(async (request, { tenant }) => {
  const principal = await authenticate(request);
  assertAdmin(principal);
  const found = await findTenant(principal, tenant);
  await deleteTenant(found);
  await audit(principal, 'tenant.delete', { tenantId: found.id, target: found.name });
  return new Response(null, { status: 204 });
});
