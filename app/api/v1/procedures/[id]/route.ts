import { json, queryParams } from '@/server/http/respond';
import { getProcedure, WaitQuery } from '@/server/procedures/api';
import { callerRoute } from '@/server/http/request-context';

export const GET = callerRoute<{ id: string }>(async ({ request, principal, database, runner }, { id }) => {
  const { wait } = queryParams(request, WaitQuery);
  return json(await getProcedure(database, runner, principal, id, wait));
});
