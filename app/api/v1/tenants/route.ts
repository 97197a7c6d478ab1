import { authenticate } from '@/server/auth';
import { json, readJson, route } from '@/server/http/respond';
import { assertAdmin, createTenant, CreateTenantBody, listTenants } from '@/server/tenants/tenants';

export const GET = route(async (request) => json({ tenants: await listTenants(await authenticate(request)) }));

export const POST = route(async (request) => {
  assertAdmin(await authenticate(request));
  return json(await createTenant(await readJson(request, CreateTenantBody)), 201);
});
