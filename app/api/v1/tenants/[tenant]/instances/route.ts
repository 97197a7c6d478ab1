import { getEngine } from '@/server/engine';
import { InstancesQuery } from '@/server/http/engine-api';
import { json, queryParams, route } from '@/server/http/respond';
import { tenantFromRequest } from '@/server/tenants/tenants';
import { findWorkflow } from '@/server/workflows/workflows';
import { database } from '@/server/storage/database';

export const GET = route<{ tenant: string }>(async (request, params) => {
  const tenant = await tenantFromRequest(request, params.tenant);
  const query = queryParams(request, InstancesQuery);
  const workflowId = query.workflow === undefined ? undefined : (await findWorkflow(database(), tenant, query.workflow)).id;
  return json({ instances: await getEngine().listInstances(tenant.id, { workflowId, state: query.state }) });
});
