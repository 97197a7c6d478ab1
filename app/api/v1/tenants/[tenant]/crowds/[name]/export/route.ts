import { CrowdParams, ExportQuery, requireCrowd } from '@/server/crowd';
import { exportResponse } from '@/server/exports/table-export';
import { queryParams } from '@/server/http/respond';
import { tenantRoute } from '@/server/http/request-context';

export const GET = tenantRoute<{ tenant: string; name: string }>(async ({ tenant, request, database, engine, formatters }, params) => {
  const { name } = CrowdParams.parse(params);
  const query = queryParams(request, ExportQuery);
  const crowd = await requireCrowd(database, tenant.id, name);
  return exportResponse(engine, formatters, tenant.id, crowd.bitmap, query, crowd.name);
});
