import { bitmapExportResponse } from '@/server/crowd/export';
import { getEngine } from '@/server/engine';
import { StepExportQuery } from '@/server/http/engine-api';
import { queryParams, route } from '@/server/http/respond';
import { tenantFromRequest } from '@/server/tenants/tenants';

export const GET = route<{ tenant: string; iid: string; step: string }>(async (request, params) => {
  const tenant = await tenantFromRequest(request, params.tenant);
  const { format, limit, users } = queryParams(request, StepExportQuery);
  const bitmap = await getEngine().stepBitmap(tenant.id, params.iid, params.step, users);
  return bitmapExportResponse(bitmap, format, `${params.iid}-${params.step}${users === 'converted' ? '-converted' : ''}`, limit);
});
