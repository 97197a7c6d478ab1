import { json, route } from '@/server/http/respond';
import { tenantFromRequest } from '@/server/tenants/tenants';
import { listVersions } from '@/server/workflows/workflows';
import { database } from '@/server/storage/database';

export const GET = route<{ tenant: string; id: string }>(async (request, { tenant, id }) =>
  json(await listVersions(database(), await tenantFromRequest(request, tenant), id)),
);
