import { listDeadLetters } from '@/server/engine';
import { DeadLettersQuery } from '@/server/http/cost-api';
import { json, queryParams, route } from '@/server/http/respond';
import { tenantFromRequest } from '@/server/tenants/tenants';
import { database } from '@/server/storage/database';

export const GET = route<{ tenant: string }>(async (request, params) => {
  const tenant = await tenantFromRequest(request, params.tenant);
  return json(await listDeadLetters(database(), tenant.id, queryParams(request, DeadLettersQuery)));
});
