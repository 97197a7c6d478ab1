import { json, queryParams } from '@/server/http/respond';
import { ListProceduresQuery, listProcedures } from '@/server/procedures/api';
import { callerRoute } from '@/server/http/request-context';

export const GET = callerRoute(async ({ request, principal, database }) => {
  return json(await listProcedures(database, principal, queryParams(request, ListProceduresQuery)));
});
