import { CrowdParams, crowdView, deleteCrowd, requireCrowdMeta, uploadCrowd } from '@/server/crowd';
import { json, route } from '@/server/http/respond';
import { tenantFromRequest } from '@/server/tenants/tenants';

type Params = { tenant: string; name: string };

export const GET = route<Params>(async (request, params) => {
  const tenant = await tenantFromRequest(request, params.tenant);
  const { name } = CrowdParams.parse(params);
  return json(crowdView(await requireCrowdMeta(tenant.id, name)));
});

/** Upload a new crowd; 409 when the name is taken. */
export const POST = route<Params>(async (request, params) => {
  const tenant = await tenantFromRequest(request, params.tenant);
  const { crowd } = await uploadCrowd(request, tenant.id, params.name, 'create');
  return json(crowdView(crowd), 201);
});

/** Upload a crowd, replacing the one of that name atomically if there is one. */
export const PUT = route<Params>(async (request, params) => {
  const tenant = await tenantFromRequest(request, params.tenant);
  const { crowd, created } = await uploadCrowd(request, tenant.id, params.name, 'replace');
  return json(crowdView(crowd), created ? 201 : 200);
});

export const DELETE = route<Params>(async (request, params) => {
  const tenant = await tenantFromRequest(request, params.tenant);
  const { name } = CrowdParams.parse(params);
  await deleteCrowd(tenant.id, name);
  return new Response(null, { status: 204 });
});
