import { authenticate } from '@/server/auth';
import { json, route } from '@/server/http/respond';
import { retryProcedure } from '@/server/procedures/api';
import { audit } from '@/server/security/audit';

export const POST = route<{ id: string }>(async (request, { id }) => {
  const principal = await authenticate(request);
  const retried = await retryProcedure(principal, id);
  await audit(principal, 'procedure.retry', { tenantId: retried.tenantId, target: id });
  return json(retried);
});
