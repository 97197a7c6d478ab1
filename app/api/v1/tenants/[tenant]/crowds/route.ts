import { crowdView, listCrowds } from '@/server/crowd';
import { json } from '@/server/http/respond';
import { tenantRoute } from '@/server/http/request-context';

export const GET = tenantRoute<{ tenant: string }>(async ({ tenant, database }) => {
  return json({ crowds: (await listCrowds(database, tenant.id)).map(crowdView) });
});
