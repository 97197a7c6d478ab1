import { authenticate } from '@/server/auth';
import { json, readJson, route } from '@/server/http/respond';
import { audit } from '@/server/security/audit';
import { findTenant, tenantFromRequest } from '@/server/tenants/tenants';
import { createDestination, CreateDestinationBody, listDestinations } from '@/server/webhooks/destinations';
import { database } from '@/server/storage/database';

export const GET = route<{ tenant: string }>(async (request, params) => {
  const tenant = await tenantFromRequest(request, params.tenant);
  return json({ destinations: await listDestinations(database(), tenant.id) });
});

/** 201 with the destination; `secret` only when it was generated (shown this once). */
export const POST = route<{ tenant: string }>(async (request, params) => {
  const principal = await authenticate(request);
  const tenant = await findTenant(database(), principal, params.tenant);
  const body = await readJson(request, CreateDestinationBody);
  const { destination, secret } = await createDestination(database(), tenant.id, body, Date.now());
  await audit(database(), principal, 'webhook.create', {
    tenantId: tenant.id,
    target: destination.name,
    details: { url: destination.url, allNotifications: destination.allNotifications },
  });
  return json({ ...destination, ...(secret ? { secret } : {}) }, 201);
});
