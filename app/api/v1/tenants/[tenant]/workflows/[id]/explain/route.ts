import { z } from 'zod';
import { json, readJson, route } from '@/server/http/respond';
import { getEngine } from '@/server/engine';
import { ExplainBody, requireDraftConditions } from '@/server/profiles/explain';
import { tenantFromRequest } from '@/server/tenants/tenants';
import { findWorkflow, getWorkflow, WORKFLOW_BODY_LIMIT } from '@/server/workflows/workflows';
import { database } from '@/server/storage/database';

type Params = { tenant: string; id: string };

/** Per condition of the current version: bitmap plan or per user, and why. */
export const GET = route<Params>(async (request, { tenant, id }) => {
  const owner = await tenantFromRequest(request, tenant);
  const workflow = await getWorkflow(database(), owner, id);
  return json({ workflowId: workflow.id, version: workflow.version, conditions: await getEngine().profiles.explainWorkflow(owner.id, workflow.definition) });
});

/** The same for an unsaved definition (the editor's draft) of this workflow. */
export const POST = route<Params>(async (request, { tenant, id }) => {
  const owner = await tenantFromRequest(request, tenant);
  const workflow = await findWorkflow(database(), owner, id);
  const body = await readJson(request, z.strictObject({ definition: z.unknown() }), WORKFLOW_BODY_LIMIT);
  // The conditions first, so each is answered as every route answers it (invalid_condition, condition_too_costly).
  requireDraftConditions(body.definition);
  const { definition } = ExplainBody.parse(body);
  return json({ workflowId: workflow.id, version: null, conditions: await getEngine().profiles.explainWorkflow(owner.id, definition) });
});
