import { json, readJson } from '@/server/http/respond';
import { CapParams, capView, deleteCap, requireCap, updateCap, UpdateCapBody } from '@/server/webhooks/caps';
import { tenantRoute } from '@/server/http/request-context';

type Params = { tenant: string; name: string };

export const GET = tenantRoute<Params>(async ({ tenant, database }, params) => {
  return json(capView(await requireCap(database, tenant.id, CapParams.parse(params).name)));
});

export const PATCH = tenantRoute<Params>(async ({ tenant, request, database, clock, audit }, params) => {
  const { name } = CapParams.parse(params);
  const body = await readJson(request, UpdateCapBody);
  const cap = await updateCap(database, tenant.id, name, body, clock.now());
  await audit('cap.update', { target: name, details: body });
  return json(cap);
});

export const DELETE = tenantRoute<Params>(async ({ tenant, database, audit }, params) => {
  const { name } = CapParams.parse(params);
  await deleteCap(database, tenant.id, name);
  await audit('cap.delete', { target: name });
  return new Response(null, { status: 204 });
});
