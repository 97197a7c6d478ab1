import { json, readJson } from '@/server/http/respond';
import { createTenant, CreateTenantBody, listTenants } from '@/server/tenants/tenants';
import { adminRoute, callerRoute } from '@/server/http/request-context';

export const GET = callerRoute(async ({ principal, database }) => json({ tenants: await listTenants(database, principal) }));

export const POST = adminRoute(async ({ request, database, audit }) => {
  const tenant = await createTenant(database, await readJson(request, CreateTenantBody));
  await audit('tenant.create', { tenantId: tenant.id, target: tenant.name, details: { partitions: tenant.partitions } });
  return json(tenant, 201);
});
