import { json, readJson } from '@/server/http/respond';
import { createApiKey, CreateApiKeyBody, listApiKeys } from '@/server/tenants/tenants';
import { tenantRoute } from '@/server/http/request-context';

export const GET = tenantRoute<{ tenant: string }>(async ({ tenant, database }) => json({ keys: await listApiKeys(database, tenant) }));

export const POST = tenantRoute<{ tenant: string }>(async ({ tenant, request, principal, database, audit }) => {
  const body = await readJson(request, CreateApiKeyBody);
  const { secret, ...key } = await createApiKey(database, tenant, principal, body);
  await audit('key.create', { target: key.id, details: { name: key.name, scopes: key.scopes } });
  return json({ ...key, secret }, 201);
});
