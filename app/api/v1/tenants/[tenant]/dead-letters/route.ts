import { listDeadLetters } from '@/server/engine';
import { DeadLettersQuery } from '@/server/http/cost-api';
import { json, queryParams } from '@/server/http/respond';
import { tenantRoute } from '@/server/http/request-context';

export const GET = tenantRoute<{ tenant: string }>(async ({ tenant, request, database }) => {
  return json(await listDeadLetters(database, tenant.id, queryParams(request, DeadLettersQuery)));
});
