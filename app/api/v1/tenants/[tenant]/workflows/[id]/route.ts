import { json, readJson } from '@/server/http/respond';
import { deleteWorkflow, getWorkflow, updateWorkflow, UpdateWorkflowRequest, WORKFLOW_BODY_LIMIT } from '@/server/workflows/workflows';
import { tenantRoute } from '@/server/http/request-context';

type Params = { tenant: string; id: string };

export const GET = tenantRoute<Params>(async ({ tenant, database }, { id }) => json(await getWorkflow(database, tenant, id)));

export const PUT = tenantRoute<Params>(async ({ tenant, request, database, clock }, { id }) => {
  return json(await updateWorkflow(database, tenant, id, await readJson(request, UpdateWorkflowRequest, WORKFLOW_BODY_LIMIT), clock.now()));
});

export const DELETE = tenantRoute<Params>(async ({ tenant, database, clock }, { id }) => {
  await deleteWorkflow(database, tenant, id, clock.now());
  return new Response(null, { status: 204 });
});
