import { authenticate } from '@/server/auth';
import { json, readJson, route } from '@/server/http/respond';
import { audit } from '@/server/security/audit';
import { assertAdmin, createTenant, CreateTenantBody, listTenants } from '@/server/tenants/tenants';
import { database } from '@/server/storage/database';

export const GET = route(async (request) => json({ tenants: await listTenants(database(), await authenticate(request)) }));

export const POST = route(async (request) => {
  const principal = await authenticate(request);
  assertAdmin(principal);
  const tenant = await createTenant(database(), await readJson(request, CreateTenantBody));
  await audit(database(), principal, 'tenant.create', { tenantId: tenant.id, target: tenant.name, details: { partitions: tenant.partitions } });
  return json(tenant, 201);
});
