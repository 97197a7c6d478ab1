import { authenticate } from '@/server/auth';
import { getEngine } from '@/server/engine';
import { StartInstanceBody } from '@/server/http/engine-api';
import { json, readJson, route } from '@/server/http/respond';
import { audit } from '@/server/security/audit';
import { findTenant } from '@/server/tenants/tenants';
import { findWorkflow } from '@/server/workflows/workflows';
import { database } from '@/server/storage/database';

export const POST = route<{ tenant: string; id: string }>(async (request, params) => {
  const principal = await authenticate(request);
  const tenant = await findTenant(database(), principal, params.tenant);
  const workflow = await findWorkflow(database(), tenant, params.id);
  const body = await readJson(request, StartInstanceBody);
  const started = await getEngine().startInstance(tenant.id, workflow.id, body);
  await audit(database(), principal, 'instance.start', { tenantId: tenant.id, target: started.instanceId, details: { workflowId: workflow.id, ...body } });
  return json(started, 202);
});
