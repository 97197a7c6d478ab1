import { authenticate } from '@/server/auth';
import { json, readJson, route } from '@/server/http/respond';
import { audit } from '@/server/security/audit';
import { findTenant, tenantFromRequest } from '@/server/tenants/tenants';
import {
  deleteDestination,
  DestinationParams,
  destinationView,
  requireDestination,
  updateDestination,
  UpdateDestinationBody,
} from '@/server/webhooks/destinations';
import { database } from '@/server/storage/database';

type Params = { tenant: string; name: string };

export const GET = route<Params>(async (request, params) => {
  const tenant = await tenantFromRequest(request, params.tenant);
  return json(destinationView(await requireDestination(database(), tenant.id, DestinationParams.parse(params).name)));
});

export const PATCH = route<Params>(async (request, params) => {
  const principal = await authenticate(request);
  const tenant = await findTenant(database(), principal, params.tenant);
  const { name } = DestinationParams.parse(params);
  const body = await readJson(request, UpdateDestinationBody);
  const destination = await updateDestination(database(), tenant.id, name, body, Date.now());
  await audit(database(), principal, 'webhook.update', { tenantId: tenant.id, target: name, details: { fields: Object.keys(body) } });
  return json(destination);
});

export const DELETE = route<Params>(async (request, params) => {
  const principal = await authenticate(request);
  const tenant = await findTenant(database(), principal, params.tenant);
  const { name } = DestinationParams.parse(params);
  await deleteDestination(database(), tenant.id, name);
  await audit(database(), principal, 'webhook.delete', { tenantId: tenant.id, target: name });
  return new Response(null, { status: 204 });
});
