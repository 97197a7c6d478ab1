import { authenticate } from '@/server/auth';
import { getEngine } from '@/server/engine';
import { UpdateWorkflowBody } from '@/server/http/engine-api';
import { json, readJson, route } from '@/server/http/respond';
import { audit } from '@/server/security/audit';
import { findTenant } from '@/server/tenants/tenants';
import { database } from '@/server/storage/database';

export const POST = route<{ tenant: string; iid: string }>(async (request, params) => {
  const principal = await authenticate(request);
  const tenant = await findTenant(database(), principal, params.tenant);
  const body = await readJson(request, UpdateWorkflowBody);
  const updating = await getEngine().updateInstanceWorkflow(tenant.id, params.iid, body);
  await audit(database(), principal, 'instance.update_workflow', { tenantId: tenant.id, target: params.iid, details: body });
  return json(updating, 202);
});
