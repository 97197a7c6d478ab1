import { StartInstanceBody } from '@/server/http/engine-api';
import { json, readJson } from '@/server/http/respond';
import { findWorkflow } from '@/server/workflows/workflows';
import { tenantRoute } from '@/server/http/request-context';

export const POST = tenantRoute<{ tenant: string; id: string }>(async ({ tenant, request, database, engine, audit }, params) => {
  const workflow = await findWorkflow(database, tenant, params.id);
  const body = await readJson(request, StartInstanceBody);
  const started = await engine.startInstance(tenant.id, workflow.id, body);
  await audit('instance.start', { target: started.instanceId, details: { workflowId: workflow.id, ...body } });
  return json(started, 202);
});
