import { authenticate } from '@/server/auth';
import { json, readJson, route } from '@/server/http/respond';
import { audit } from '@/server/security/audit';
import { findTenant, tenantFromRequest } from '@/server/tenants/tenants';
import { CapParams, capView, deleteCap, requireCap, updateCap, UpdateCapBody } from '@/server/webhooks/caps';
import { database } from '@/server/storage/database';

type Params = { tenant: string; name: string };

export const GET = route<Params>(async (request, params) => {
  const tenant = await tenantFromRequest(request, params.tenant);
  return json(capView(await requireCap(database(), tenant.id, CapParams.parse(params).name)));
});

export const PATCH = route<Params>(async (request, params) => {
  const principal = await authenticate(request);
  const tenant = await findTenant(database(), principal, params.tenant);
  const { name } = CapParams.parse(params);
  const body = await readJson(request, UpdateCapBody);
  const cap = await updateCap(database(), tenant.id, name, body, Date.now());
  await audit(database(), principal, 'cap.update', { tenantId: tenant.id, target: name, details: body });
  return json(cap);
});

export const DELETE = route<Params>(async (request, params) => {
  const principal = await authenticate(request);
  const tenant = await findTenant(database(), principal, params.tenant);
  const { name } = CapParams.parse(params);
  await deleteCap(database(), tenant.id, name);
  await audit(database(), principal, 'cap.delete', { tenantId: tenant.id, target: name });
  return new Response(null, { status: 204 });
});
