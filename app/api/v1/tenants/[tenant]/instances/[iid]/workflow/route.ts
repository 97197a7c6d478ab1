import { getEngine } from '@/server/engine';
import { UpdateWorkflowBody } from '@/server/http/engine-api';
import { json, readJson, route } from '@/server/http/respond';
import { tenantFromRequest } from '@/server/tenants/tenants';

export const POST = route<{ tenant: string; iid: string }>(async (request, params) => {
  const tenant = await tenantFromRequest(request, params.tenant);
  const body = await readJson(request, UpdateWorkflowBody);
  return json(await getEngine().updateInstanceWorkflow(tenant.id, params.iid, body), 202);
});
