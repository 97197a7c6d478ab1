import { bitmapExportResponse, CrowdParams, ExportQuery, requireCrowd } from '@/server/crowd';
import { queryParams, route } from '@/server/http/respond';
import { tenantFromRequest } from '@/server/tenants/tenants';
import { database } from '@/server/storage/database';

export const GET = route<{ tenant: string; name: string }>(async (request, params) => {
  const tenant = await tenantFromRequest(request, params.tenant);
  const { name } = CrowdParams.parse(params);
  const { format, limit } = queryParams(request, ExportQuery);
  const crowd = await requireCrowd(database(), tenant.id, name);
  return bitmapExportResponse(crowd.bitmap, format, crowd.name, limit);
});
