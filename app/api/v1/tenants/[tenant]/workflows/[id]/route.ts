import { json, readJson, route } from '@/server/http/respond';
import { tenantFromRequest } from '@/server/tenants/tenants';
import { deleteWorkflow, getWorkflow, updateWorkflow, UpdateWorkflowRequest, WORKFLOW_BODY_LIMIT } from '@/server/workflows/workflows';
import { database } from '@/server/storage/database';

type Params = { tenant: string; id: string };

export const GET = route<Params>(async (request, { tenant, id }) => json(await getWorkflow(database(), await tenantFromRequest(request, tenant), id)));

export const PUT = route<Params>(async (request, { tenant, id }) => {
  const owner = await tenantFromRequest(request, tenant);
  return json(await updateWorkflow(database(), owner, id, await readJson(request, UpdateWorkflowRequest, WORKFLOW_BODY_LIMIT)));
});

export const DELETE = route<Params>(async (request, { tenant, id }) => {
  await deleteWorkflow(database(), await tenantFromRequest(request, tenant), id);
  return new Response(null, { status: 204 });
});
