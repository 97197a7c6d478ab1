import { getEngine } from '@/server/engine';
import { InstancesQuery } from '@/server/http/engine-api';
import { json, queryParams, route } from '@/server/http/respond';
import { tenantFromRequest } from '@/server/tenants/tenants';

export const GET = route<{ tenant: string }>(async (request, params) => {
  const tenant = await tenantFromRequest(request, params.tenant);
  const query = queryParams(request, InstancesQuery);
  return json({ instances: await getEngine().listInstances(tenant.id, { workflowId: query.workflow, state: query.state }) });
});
