import { CrowdParams, ExportQuery, requireCrowd } from '@/server/crowd';
import { getEngine } from '@/server/engine';
import { exportResponse } from '@/server/exports/table-export';
import { queryParams, route } from '@/server/http/respond';
import { tenantFromRequest } from '@/server/tenants/tenants';
import { database } from '@/server/storage/database';

export const GET = route<{ tenant: string; name: string }>(async (request, params) => {
  const tenant = await tenantFromRequest(request, params.tenant);
  const { name } = CrowdParams.parse(params);
  const query = queryParams(request, ExportQuery);
  const crowd = await requireCrowd(database(), tenant.id, name);
  return exportResponse(getEngine(), tenant.id, crowd.bitmap, query, crowd.name);
});
