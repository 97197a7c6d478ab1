import { authenticate } from '@/server/auth';
import { json, route } from '@/server/http/respond';
import { audit } from '@/server/security/audit';
import { findTenant, revokeApiKey } from '@/server/tenants/tenants';
import { database } from '@/server/storage/database';

export const DELETE = route<{ tenant: string; keyId: string }>(async (request, params) => {
  const principal = await authenticate(request);
  const tenant = await findTenant(database(), principal, params.tenant);
  const revoked = await revokeApiKey(database(), tenant, params.keyId);
  await audit(database(), principal, 'key.revoke', { tenantId: tenant.id, target: revoked.id, details: { alsoRevoked: revoked.alsoRevoked } });
  return json(revoked);
});
