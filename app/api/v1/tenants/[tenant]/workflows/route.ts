import { json, readJson, route } from '@/server/http/respond';
import { tenantFromRequest } from '@/server/tenants/tenants';
import { createWorkflow, CreateWorkflowRequest, listWorkflows, WORKFLOW_BODY_LIMIT } from '@/server/workflows/workflows';
import { database } from '@/server/storage/database';

type Params = { tenant: string };

export const GET = route<Params>(async (request, { tenant }) => json({ workflows: await listWorkflows(database(), await tenantFromRequest(request, tenant)) }));

export const POST = route<Params>(async (request, { tenant }) => {
  const owner = await tenantFromRequest(request, tenant);
  return json(await createWorkflow(database(), owner, await readJson(request, CreateWorkflowRequest, WORKFLOW_BODY_LIMIT)), 201);
});
