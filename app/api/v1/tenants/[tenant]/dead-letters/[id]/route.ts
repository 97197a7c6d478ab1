import { discardDeadLetter, getDeadLetter } from '@/server/engine';
import { json } from '@/server/http/respond';
import { tenantRoute } from '@/server/http/request-context';

export const GET = tenantRoute<{ tenant: string; id: string }>(async ({ tenant, database }, params) => {
  return json(await getDeadLetter(database, tenant.id, params.id));
});

export const DELETE = tenantRoute<{ tenant: string; id: string }>(async ({ tenant, database }, params) => {
  await discardDeadLetter(database, tenant.id, params.id);
  return new Response(null, { status: 204 });
});
