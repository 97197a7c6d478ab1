import { authenticate } from '@/server/auth';
import { json, route } from '@/server/http/respond';
import { assertAdmin, deleteTenant, findTenant, tenantFromRequest, tenantView } from '@/server/tenants/tenants';

export const GET = route<{ tenant: string }>(async (request, { tenant }) => json(tenantView(await tenantFromRequest(request, tenant))));

export const DELETE = route<{ tenant: string }>(async (request, { tenant }) => {
  const principal = await authenticate(request);
  assertAdmin(principal);
  await deleteTenant(await findTenant(principal, tenant));
  return new Response(null, { status: 204 });
});
