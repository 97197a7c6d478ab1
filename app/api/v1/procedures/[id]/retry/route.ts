import { authenticate } from '@/server/auth';
import { json, route } from '@/server/http/respond';
import { retryProcedure } from '@/server/procedures/api';
import { getProcedureRunner } from '@/server/procedures/runner';
import { audit } from '@/server/security/audit';
import { database } from '@/server/storage/database';

export const POST = route<{ id: string }>(async (request, { id }) => {
  const principal = await authenticate(request);
  const retried = await retryProcedure(database(), getProcedureRunner(), principal, id);
  await audit(database(), principal, 'procedure.retry', { tenantId: retried.tenantId, target: id });
  return json(retried);
});
