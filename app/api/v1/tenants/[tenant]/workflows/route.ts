import { json, readJson } from '@/server/http/respond';
import { createWorkflow, CreateWorkflowRequest, listWorkflows, WORKFLOW_BODY_LIMIT } from '@/server/workflows/workflows';
import { tenantRoute } from '@/server/http/request-context';

type Params = { tenant: string };

export const GET = tenantRoute<Params>(async ({ tenant, database }) => json({ workflows: await listWorkflows(database, tenant) }));

export const POST = tenantRoute<Params>(async ({ tenant, request, database, clock }) => {
  return json(await createWorkflow(database, tenant, await readJson(request, CreateWorkflowRequest, WORKFLOW_BODY_LIMIT), clock.now()), 201);
});
