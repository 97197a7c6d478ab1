import { json } from '@/server/http/respond';
import { deleteTenant, tenantView } from '@/server/tenants/tenants';
import { adminTenantRoute, tenantRoute } from '@/server/http/request-context';

export const GET = tenantRoute<{ tenant: string }>(async ({ tenant }) => json(tenantView(tenant)));

export const DELETE = adminTenantRoute<{ tenant: string }>(async ({ tenant, database, audit }) => {
  await deleteTenant(database, tenant);
  await audit('tenant.delete', { target: tenant.name });
  return new Response(null, { status: 204 });
});
