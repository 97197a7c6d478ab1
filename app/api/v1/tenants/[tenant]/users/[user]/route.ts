import { UserParams } from '@/server/http/engine-api';
import { json } from '@/server/http/respond';
import { tenantRoute } from '@/server/http/request-context';

export const GET = tenantRoute<{ tenant: string; user: string }>(async ({ tenant, engine }, params) => {
  const { user } = UserParams.parse({ user: params.user });
  return json(await engine.whereIsUser(tenant.id, user));
});
