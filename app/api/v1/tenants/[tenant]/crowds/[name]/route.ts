import { CrowdParams, crowdView, deleteCrowd, requireCrowdMeta } from '@/server/crowd';
import { postCrowd, putCrowd } from '@/server/http/crowd-upload-route';
import { json } from '@/server/http/respond';
import { tenantRoute } from '@/server/http/request-context';

type Params = { tenant: string; name: string };

export const GET = tenantRoute<Params>(async ({ tenant, database }, params) => {
  const { name } = CrowdParams.parse(params);
  return json(crowdView(await requireCrowdMeta(database, tenant.id, name)));
});

// Usually answered by our HTTP server (server/http/http-server.ts) before Next.js routes the request; same handlers.
export const POST = postCrowd;
export const PUT = putCrowd;

export const DELETE = tenantRoute<Params>(async ({ tenant, database }, params) => {
  const { name } = CrowdParams.parse(params);
  await deleteCrowd(database, tenant.id, name);
  return new Response(null, { status: 204 });
});
