import { json, readJson } from '@/server/http/respond';
import { findWorkflow } from '@/server/workflows/workflows';
import { PreviewPathBody } from '@/server/workflows/preview-path';
import { tenantRoute } from '@/server/http/request-context';

type Params = { tenant: string; id: string };

/** The path one user would take through the workflow now (server/engine/preview.ts); moves no one. */
export const POST = tenantRoute<Params>(async ({ tenant, request, database, engine }, { id }) => {
  const workflow = await findWorkflow(database, tenant, id);
  const body = await readJson(request, PreviewPathBody);
  return json(await engine.previewPath(tenant.id, workflow.id, { ...body, version: workflow.currentVersion }));
});
