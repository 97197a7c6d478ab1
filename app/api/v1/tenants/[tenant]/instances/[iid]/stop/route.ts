import { authenticate } from '@/server/auth';
import { getEngine } from '@/server/engine';
import { json, route } from '@/server/http/respond';
import { audit } from '@/server/security/audit';
import { findTenant } from '@/server/tenants/tenants';
import { database } from '@/server/storage/database';

export const POST = route<{ tenant: string; iid: string }>(async (request, params) => {
  const principal = await authenticate(request);
  const tenant = await findTenant(database(), principal, params.tenant);
  const stopping = await getEngine().stopInstance(tenant.id, params.iid);
  await audit(database(), principal, 'instance.stop', { tenantId: tenant.id, target: params.iid });
  return json(stopping, 202);
});
