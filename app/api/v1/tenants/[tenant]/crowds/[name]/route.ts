import { CrowdParams, crowdView, deleteCrowd, requireCrowdMeta } from '@/server/crowd';
import { postCrowd, putCrowd } from '@/server/http/crowd-upload-route';
import { json, route } from '@/server/http/respond';
import { tenantFromRequest } from '@/server/tenants/tenants';
import { database } from '@/server/storage/database';

type Params = { tenant: string; name: string };

export const GET = route<Params>(async (request, params) => {
  const tenant = await tenantFromRequest(request, params.tenant);
  const { name } = CrowdParams.parse(params);
  return json(crowdView(await requireCrowdMeta(database(), tenant.id, name)));
});

// Usually answered by our HTTP server (server/http/http-server.ts) before Next.js routes the request; same handlers.
export const POST = postCrowd;
export const PUT = putCrowd;

export const DELETE = route<Params>(async (request, params) => {
  const tenant = await tenantFromRequest(request, params.tenant);
  const { name } = CrowdParams.parse(params);
  await deleteCrowd(database(), tenant.id, name);
  return new Response(null, { status: 204 });
});
