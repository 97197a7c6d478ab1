import { UpdateCrowdBody } from '@/server/http/engine-api';
import { json, readJson } from '@/server/http/respond';
import { tenantRoute } from '@/server/http/request-context';

export const POST = tenantRoute<{ tenant: string; iid: string }>(async ({ tenant, request, engine, audit }, params) => {
  const body = await readJson(request, UpdateCrowdBody);
  const updating = await engine.updateInstanceCrowd(tenant.id, params.iid, body);
  await audit('instance.update_crowd', { target: params.iid, details: body });
  return json(updating, 202);
});
