import { getEngine } from '@/server/engine';
import { json, readJson, route } from '@/server/http/respond';
import { tenantFromRequest } from '@/server/tenants/tenants';
import { findWorkflow } from '@/server/workflows/workflows';
import { PreviewPathBody } from '@/server/workflows/preview-path';
import { database } from '@/server/storage/database';

type Params = { tenant: string; id: string };

/** The path one user would take through the workflow now (server/engine/preview.ts); moves no one. */
export const POST = route<Params>(async (request, { tenant, id }) => {
  const owner = await tenantFromRequest(request, tenant);
  const workflow = await findWorkflow(database(), owner, id);
  const body = await readJson(request, PreviewPathBody);
  return json(await getEngine().previewPath(owner.id, workflow.id, { ...body, version: workflow.currentVersion }));
});
