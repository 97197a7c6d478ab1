import { authenticate } from '@/server/auth';
import { json, readJson, route } from '@/server/http/respond';
import { audit } from '@/server/security/audit';
import { findTenant, tenantFromRequest } from '@/server/tenants/tenants';
import { createCap, CreateCapBody, listCaps } from '@/server/webhooks/caps';
import { database } from '@/server/storage/database';

export const GET = route<{ tenant: string }>(async (request, params) => {
  const tenant = await tenantFromRequest(request, params.tenant);
  return json({ caps: await listCaps(database(), tenant.id) });
});

export const POST = route<{ tenant: string }>(async (request, params) => {
  const principal = await authenticate(request);
  const tenant = await findTenant(database(), principal, params.tenant);
  const body = await readJson(request, CreateCapBody);
  const cap = await createCap(database(), tenant.id, body, Date.now());
  await audit(database(), principal, 'cap.create', { tenantId: tenant.id, target: cap.name, details: body });
  return json(cap, 201);
});
