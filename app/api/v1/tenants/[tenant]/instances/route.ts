import { InstancesQuery } from '@/server/http/engine-api';
import { json, queryParams } from '@/server/http/respond';
import { findWorkflow } from '@/server/workflows/workflows';
import { tenantRoute } from '@/server/http/request-context';

export const GET = tenantRoute<{ tenant: string }>(async ({ tenant, request, database, engine }) => {
  const query = queryParams(request, InstancesQuery);
  const workflowId = query.workflow === undefined ? undefined : (await findWorkflow(database, tenant, query.workflow)).id;
  return json({ instances: await engine.listInstances(tenant.id, { workflowId, state: query.state }) });
});
