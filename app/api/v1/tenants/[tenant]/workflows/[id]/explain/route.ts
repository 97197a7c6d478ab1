import { z } from 'zod';
import { json, readJson } from '@/server/http/respond';
import { ExplainBody, requireDraftConditions } from '@/server/profiles/explain';
import { findWorkflow, getWorkflow, WORKFLOW_BODY_LIMIT } from '@/server/workflows/workflows';
import { tenantRoute } from '@/server/http/request-context';

type Params = { tenant: string; id: string };

/** Per condition of the current version: bitmap plan or per user, and why. */
export const GET = tenantRoute<Params>(async ({ tenant, database, engine }, { id }) => {
  const workflow = await getWorkflow(database, tenant, id);
  return json({ workflowId: workflow.id, version: workflow.version, conditions: await engine.profiles.explainWorkflow(tenant.id, workflow.definition) });
});

/** The same for an unsaved definition (the editor's draft) of this workflow. */
export const POST = tenantRoute<Params>(async ({ tenant, request, database, engine }, { id }) => {
  const workflow = await findWorkflow(database, tenant, id);
  const body = await readJson(request, z.strictObject({ definition: z.unknown() }), WORKFLOW_BODY_LIMIT);
  // The conditions first, so each is answered as every route answers it (invalid_condition, condition_too_costly).
  requireDraftConditions(body.definition);
  const { definition } = ExplainBody.parse(body);
  return json({ workflowId: workflow.id, version: null, conditions: await engine.profiles.explainWorkflow(tenant.id, definition) });
});
