import { json } from '@/server/http/respond';
import { retryProcedure } from '@/server/procedures/api';
import { callerRoute } from '@/server/http/request-context';

export const POST = callerRoute<{ id: string }>(async ({ principal, database, runner, audit }, { id }) => {
  const retried = await retryProcedure(database, runner, principal, id);
  await audit('procedure.retry', { tenantId: retried.tenantId, target: id });
  return json(retried);
});
