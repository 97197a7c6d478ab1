import { authenticate } from '@/server/auth';
import { json, queryParams, route } from '@/server/http/respond';
import { ListProceduresQuery, listProcedures } from '@/server/procedures/api';
import { database } from '@/server/storage/database';

export const GET = route(async (request) => {
  const principal = await authenticate(request);
  return json(await listProcedures(database(), principal, queryParams(request, ListProceduresQuery)));
});
