import { authenticate } from '@/server/auth';
import { json, queryParams, route } from '@/server/http/respond';
import { getProcedure, WaitQuery } from '@/server/procedures/api';
import { getProcedureRunner } from '@/server/procedures/runner';
import { database } from '@/server/storage/database';

export const GET = route<{ id: string }>(async (request, { id }) => {
  const principal = await authenticate(request);
  const { wait } = queryParams(request, WaitQuery);
  return json(await getProcedure(database(), getProcedureRunner(), principal, id, wait));
});
