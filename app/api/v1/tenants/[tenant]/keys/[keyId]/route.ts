import { json } from '@/server/http/respond';
import { revokeApiKey } from '@/server/tenants/tenants';
import { tenantRoute } from '@/server/http/request-context';

export const DELETE = tenantRoute<{ tenant: string; keyId: string }>(async ({ tenant, database, audit, clock }, params) => {
  const revoked = await revokeApiKey(database, tenant, params.keyId, clock.now());
  await audit('key.revoke', { target: revoked.id, details: { alsoRevoked: revoked.alsoRevoked } });
  return json(revoked);
});
